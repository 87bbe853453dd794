//go:build linux

package netops

import (
	"context"
	"fmt"
	"net"

	"github.com/containernetworking/plugins/pkg/netlinksafe"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
)

// The VF settings are made with IFLA_VF_* attributes on the PF netdev in the
// host namespace; they need SR-IOV hardware and are covered by the fake in
// tests on machines without it.

// VF implements Ops.
func (lx Linux) VF(_ context.Context, pf string, vf int) (VFSettings, error) {
	var out VFSettings
	err := lx.withLink(Host, pf, func(_ netlinksafe.Handle, l netlink.Link) error {
		for _, v := range l.Attrs().Vfs {
			if v.ID != vf {
				continue
			}
			out = VFSettings{
				VLAN: v.Vlan, QoS: v.Qos, VLANProto: v.VlanProto, SpoofChk: v.Spoofchk, Trust: v.Trust != 0,
				LinkState: v.LinkState, MinTxRate: int(v.MinTxRate), MaxTxRate: int(v.MaxTxRate),
			}
			return nil
		}
		return fmt.Errorf("PF %s has no VF %d", pf, vf)
	})
	return out, err
}

func (lx Linux) withPF(pf string, vf int, what string, f func(h netlinksafe.Handle, l netlink.Link) error) error {
	return lx.withLink(Host, pf, func(h netlinksafe.Handle, l netlink.Link) error {
		if err := f(h, l); err != nil {
			return fmt.Errorf("setting %s of VF %d through PF %s: %w", what, vf, pf, err)
		}
		return nil
	})
}

// SetVFVLAN implements Ops.
func (lx Linux) SetVFVLAN(_ context.Context, pf string, vf, vlan, qos, proto int) error {
	return lx.withPF(pf, vf, "vlan", func(h netlinksafe.Handle, l netlink.Link) error {
		if proto == 0 {
			return h.LinkSetVfVlanQos(l, vf, vlan, qos)
		}
		return h.LinkSetVfVlanQosProto(l, vf, vlan, qos, proto)
	})
}

// SetVFGUID implements Ops: the node GUID, then the port GUID, as
// ib-sriov-cni and `ip link set PF vf N node_guid G port_guid G` do.
func (lx Linux) SetVFGUID(_ context.Context, pf string, vf int, guid net.HardwareAddr) error {
	if len(guid) != 8 {
		return fmt.Errorf("GUID %s of VF %d: want 8 bytes, have %d", guid, vf, len(guid))
	}
	return lx.withPF(pf, vf, "GUID", func(h netlinksafe.Handle, l netlink.Link) error {
		if err := h.LinkSetVfGUID(l, vf, guid, nl.IFLA_VF_IB_NODE_GUID); err != nil {
			return fmt.Errorf("node GUID: %w", err)
		}
		if err := h.LinkSetVfGUID(l, vf, guid, nl.IFLA_VF_IB_PORT_GUID); err != nil {
			return fmt.Errorf("port GUID: %w", err)
		}
		return nil
	})
}

// SetVFSpoofChk implements Ops.
func (lx Linux) SetVFSpoofChk(_ context.Context, pf string, vf int, on bool) error {
	return lx.withPF(pf, vf, "spoofchk", func(h netlinksafe.Handle, l netlink.Link) error {
		return h.LinkSetVfSpoofchk(l, vf, on)
	})
}

// SetVFTrust implements Ops.
func (lx Linux) SetVFTrust(_ context.Context, pf string, vf int, on bool) error {
	return lx.withPF(pf, vf, "trust", func(h netlinksafe.Handle, l netlink.Link) error {
		return h.LinkSetVfTrust(l, vf, on)
	})
}

// SetVFLinkState implements Ops.
func (lx Linux) SetVFLinkState(_ context.Context, pf string, vf int, state uint32) error {
	return lx.withPF(pf, vf, "link_state", func(h netlinksafe.Handle, l netlink.Link) error {
		return h.LinkSetVfState(l, vf, state)
	})
}

// SetVFRate implements Ops.
func (lx Linux) SetVFRate(_ context.Context, pf string, vf, minRate, maxRate int) error {
	return lx.withPF(pf, vf, "tx rate", func(h netlinksafe.Handle, l netlink.Link) error {
		return h.LinkSetVfRate(l, vf, minRate, maxRate)
	})
}
