//go:build e2e

package framework

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"syscall"

	"github.com/vishvananda/netlink"
)

// bridgeNetwork is the private bridge whose address is the node IP and to
// which the CNI bridge plugin attaches pods. No forwarding, no masquerade and
// no sysctl is set: traffic stays between this machine and its own pods.
type bridgeNetwork struct {
	Name   string     // link name, at most 15 bytes
	Subnet *net.IPNet // e.g. 10.217.0.0/24
	NodeIP net.IP     // first address of Subnet, set on the bridge
}

func newBridgeNetwork(name, cidr string) (*bridgeNetwork, error) {
	ip, subnet, err := net.ParseCIDR(cidr)
	if err != nil {
		return nil, fmt.Errorf("bridge network: %w", err)
	}
	ip = ip.To4()
	if ip == nil || !ip.Equal(subnet.IP.To4()) {
		return nil, fmt.Errorf("bridge network: %q must be an IPv4 network address", cidr)
	}
	node := make(net.IP, 4)
	copy(node, ip)
	node[3]++
	return &bridgeNetwork{Name: name, Subnet: subnet, NodeIP: node}, nil
}

// create makes the bridge, gives it the node IP and brings it up. It refuses a
// subnet that overlaps a route the host already has on another link.
func (b *bridgeNetwork) create() error {
	routes, err := netlink.RouteList(nil, netlink.FAMILY_V4)
	if err != nil {
		return fmt.Errorf("bridge %s: list routes: %w", b.Name, err)
	}
	for _, r := range routes {
		if r.Dst == nil || r.Dst.IP.IsUnspecified() {
			continue
		}
		if l, err := netlink.LinkByIndex(r.LinkIndex); err == nil && l.Attrs().Name == b.Name {
			continue
		}
		if r.Dst.Contains(b.Subnet.IP) || b.Subnet.Contains(r.Dst.IP) {
			return fmt.Errorf("bridge %s: subnet %s overlaps host route %s; set RAILYARD_E2E_SUBNET", b.Name, b.Subnet, r.Dst)
		}
	}
	br := &netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: b.Name}}
	if err := netlink.LinkAdd(br); err != nil {
		if errors.Is(err, syscall.EEXIST) {
			return fmt.Errorf("bridge %s: already exists and no stale run claims it; if an earlier run left it, delete it (ip link del %s): %w", b.Name, b.Name, err)
		}
		return fmt.Errorf("bridge %s: add: %w", b.Name, err)
	}
	link, err := netlink.LinkByName(b.Name)
	if err != nil {
		return fmt.Errorf("bridge %s: %w", b.Name, err)
	}
	addr := &netlink.Addr{IPNet: &net.IPNet{IP: b.NodeIP, Mask: b.Subnet.Mask}}
	if err := netlink.AddrAdd(link, addr); err != nil {
		return fmt.Errorf("bridge %s: add address %s: %w", b.Name, addr, err)
	}
	if err := netlink.LinkSetUp(link); err != nil {
		return fmt.Errorf("bridge %s: up: %w", b.Name, err)
	}
	return nil
}

// deleteBridge removes the named bridge and any veth still enslaved to it.
// A missing bridge is not an error.
func deleteBridge(name string) error {
	link, err := netlink.LinkByName(name)
	if err != nil {
		var notFound netlink.LinkNotFoundError
		if errors.As(err, &notFound) {
			return nil
		}
		return fmt.Errorf("delete bridge %s: %w", name, err)
	}
	var errs []error
	if links, err := netlink.LinkList(); err == nil {
		for _, l := range links {
			if l.Attrs().MasterIndex == link.Attrs().Index {
				// ENODEV: the kernel removed it meanwhile, as it does a
				// veth whose peer's network namespace (a node's) is going
				// away: gone is what we want.
				if err := netlink.LinkDel(l); err != nil && !errors.Is(err, syscall.ENODEV) {
					errs = append(errs, fmt.Errorf("delete %s: %w", l.Attrs().Name, err))
				}
			}
		}
	}
	if err := netlink.LinkDel(link); err != nil {
		errs = append(errs, fmt.Errorf("delete bridge %s: %w", name, err))
	}
	return errors.Join(errs...)
}

// cniNetworkName names the pod network (and prefixes libcni's cache files).
const cniNetworkName = "railyard-e2e"

// writeCNIConfig writes the pod network: the CNI bridge plugin on the
// framework's bridge with host-local IPAM whose state stays in ipamDir. The
// bridge is not the pods' gateway (so the plugin never turns on IP
// forwarding) and there is no masquerade.
func (b *bridgeNetwork) writeCNIConfig(confDir, ipamDir string) error {
	first := make(net.IP, 4)
	copy(first, b.Subnet.IP.To4())
	first[3] = 10
	last := make(net.IP, 4)
	copy(last, b.Subnet.IP.To4())
	last[3] = 250
	conf := map[string]any{
		"cniVersion": "1.0.0",
		"name":       cniNetworkName,
		"plugins": []any{
			map[string]any{
				"type":             "bridge",
				"bridge":           b.Name,
				"isGateway":        false,
				"isDefaultGateway": false,
				"ipMasq":           false,
				"hairpinMode":      false,
				"ipam": map[string]any{
					"type":    "host-local",
					"dataDir": ipamDir,
					"ranges": [][]map[string]string{{{
						"subnet":     b.Subnet.String(),
						"rangeStart": first.String(),
						"rangeEnd":   last.String(),
					}}},
				},
			},
		},
	}
	data, err := json.MarshalIndent(conf, "", "  ")
	if err != nil {
		return fmt.Errorf("cni config: %w", err)
	}
	if err := os.MkdirAll(confDir, 0o755); err != nil {
		return fmt.Errorf("cni config: %w", err)
	}
	if err := os.WriteFile(filepath.Join(confDir, "10-railyard-e2e.conflist"), data, 0o644); err != nil {
		return fmt.Errorf("cni config: %w", err)
	}
	return nil
}
