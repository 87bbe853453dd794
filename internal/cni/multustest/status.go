package multustest

import (
	"encoding/json"
	"fmt"
	"net"

	cnitypes "github.com/containernetworking/cni/pkg/types"
	current "github.com/containernetworking/cni/pkg/types/100"
)

// NetStatus is one entry of a pod's k8s.v1.cni.cncf.io/network-status
// annotation (network-attachment-definition-client's NetworkStatus).
type NetStatus struct {
	Name       string          `json:"name"`
	Interface  string          `json:"interface,omitempty"`
	IPs        []string        `json:"ips,omitempty"`
	Mac        string          `json:"mac,omitempty"`
	Mtu        int             `json:"mtu,omitempty"`
	Default    bool            `json:"default,omitempty"`
	DNS        cnitypes.DNS    `json:"dns,omitempty"`
	DeviceInfo json.RawMessage `json:"device-info,omitempty"`
	Gateway    []string        `json:"gateway,omitempty"`
}

// NetworkStatus is the entry Multus writes for a delegate named delegate
// whose ADD returned r, with the document of its device-info file
// (CreateNetworkStatus, for a result with one sandbox interface: its
// name, MAC and MTU, every IP, the gateways of default routes, the DNS,
// and the device-info document as read).
func NetworkStatus(r cnitypes.Result, delegate string, deviceInfo json.RawMessage) (NetStatus, error) {
	st := NetStatus{Name: delegate, DeviceInfo: deviceInfo}
	res, err := current.NewResultFromResult(r)
	if err != nil {
		return st, fmt.Errorf("converting the result: %w", err)
	}
	for _, i := range res.Interfaces {
		if i.Sandbox != "" {
			st.Interface, st.Mac, st.Mtu = i.Name, i.Mac, i.Mtu
		}
	}
	for _, ip := range res.IPs {
		st.IPs = append(st.IPs, ip.Address.IP.String())
	}
	for _, rt := range res.Routes {
		if rt.Dst.IP == nil && rt.Dst.Mask == nil || rt.Dst.IP.Equal(net.IPv4zero) || rt.Dst.IP.Equal(net.IPv6zero) {
			st.Gateway = append(st.Gateway, rt.GW.String())
		}
	}
	st.DNS = res.DNS
	return st, nil
}
