//go:build linux

package netops

import (
	"context"
	"encoding/binary"
	"fmt"
	"net"

	"github.com/containernetworking/plugins/pkg/netlinksafe"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"
)

// SetVFMAC implements Ops: `ip link set PF vf N mac M`.
func (lx Linux) SetVFMAC(_ context.Context, pf string, vf int, mac net.HardwareAddr) error {
	if len(mac) != 6 {
		return fmt.Errorf("MAC %s of VF %d: want 6 bytes, have %d", mac, vf, len(mac))
	}
	return lx.withPF(pf, vf, "MAC", func(h netlinksafe.Handle, l netlink.Link) error {
		return h.LinkSetVfHardwareAddr(l, vf, mac)
	})
}

// VFAddresses implements Ops. netlink's parsed VF list has no GUIDs, so
// the PF's link message is requested and its IFLA_VFINFO_LIST parsed here.
func (lx Linux) VFAddresses(_ context.Context, pf string, vf int) (VFAddresses, error) {
	var out VFAddresses
	err := lx.withLink(Host, pf, func(_ netlinksafe.Handle, l netlink.Link) error {
		req := nl.NewNetlinkRequest(unix.RTM_GETLINK, unix.NLM_F_ACK)
		msg := nl.NewIfInfomsg(unix.AF_UNSPEC)
		msg.Index = int32(l.Attrs().Index)
		req.AddData(msg)
		req.AddData(nl.NewRtAttr(unix.IFLA_EXT_MASK, nl.Uint32Attr(nl.RTEXT_FILTER_VF)))
		msgs, err := req.Execute(unix.NETLINK_ROUTE, unix.RTM_NEWLINK)
		if err != nil {
			return fmt.Errorf("reading VFs of %s: %w", pf, err)
		}
		for _, m := range msgs {
			if len(m) < unix.SizeofIfInfomsg {
				continue
			}
			attrs, err := parseAttrs(m[unix.SizeofIfInfomsg:])
			if err != nil {
				return fmt.Errorf("parsing link message of %s: %w", pf, err)
			}
			for _, a := range attrs {
				if a.typ != unix.IFLA_VFINFO_LIST {
					continue
				}
				got, ok, err := parseVFAddresses(a.value, vf)
				if err != nil {
					return fmt.Errorf("VF list of %s: %w", pf, err)
				}
				if ok {
					out = got
					return nil
				}
			}
		}
		return fmt.Errorf("PF %s has no VF %d", pf, vf)
	})
	return out, err
}

// parseVFAddresses reads VF vf's MAC and GUIDs from the payload of an
// IFLA_VFINFO_LIST attribute. Each attribute's first u32 is the VF number
// (struct ifla_vf_mac, struct ifla_vf_guid); a MAC of all zeros is kept (it
// is what an unset VF reports), GUIDs are big-endian like ip-link prints
// them, from the host-order u64 the kernel sends.
func parseVFAddresses(b []byte, vf int) (VFAddresses, bool, error) {
	infos, err := parseAttrs(b)
	if err != nil {
		return VFAddresses{}, false, err
	}
	for _, info := range infos {
		if info.typ != nl.IFLA_VF_INFO {
			continue
		}
		attrs, err := parseAttrs(info.value)
		if err != nil {
			return VFAddresses{}, false, err
		}
		var out VFAddresses
		id := -1
		for _, a := range attrs {
			switch a.typ {
			case nl.IFLA_VF_MAC:
				if len(a.value) < 4+6 {
					return VFAddresses{}, false, fmt.Errorf("short IFLA_VF_MAC (%d bytes)", len(a.value))
				}
				id = int(nl.NativeEndian().Uint32(a.value))
				out.MAC = net.HardwareAddr(append([]byte(nil), a.value[4:10]...))
			case nl.IFLA_VF_IB_NODE_GUID, nl.IFLA_VF_IB_PORT_GUID:
				if len(a.value) < nl.SizeofVfGUID {
					return VFAddresses{}, false, fmt.Errorf("short VF GUID attribute (%d bytes)", len(a.value))
				}
				id = int(nl.NativeEndian().Uint32(a.value))
				g := make(net.HardwareAddr, 8)
				binary.BigEndian.PutUint64(g, nl.NativeEndian().Uint64(a.value[8:16]))
				if a.typ == nl.IFLA_VF_IB_NODE_GUID {
					out.NodeGUID = g
				} else {
					out.PortGUID = g
				}
			}
		}
		if id == vf {
			return out, true, nil
		}
	}
	return VFAddresses{}, false, nil
}

type attr struct {
	typ   int
	value []byte
}

// parseAttrs splits netlink attributes (struct nlattr: u16 length
// including the 4-byte header, u16 type, value padded to 4 bytes). Unlike
// netlink's nl.ParseRouteAttr it never panics on a malformed buffer (found
// by FuzzParseVFAddresses); the nested and byte-order flags are masked off
// the type.
func parseAttrs(b []byte) ([]attr, error) {
	var out []attr
	for len(b) >= 4 {
		n := int(nl.NativeEndian().Uint16(b))
		typ := int(nl.NativeEndian().Uint16(b[2:]) & 0x3fff)
		if n < 4 || n > len(b) {
			return nil, fmt.Errorf("netlink attribute of length %d in %d bytes", n, len(b))
		}
		out = append(out, attr{typ: typ, value: b[4:n]})
		next := (n + 3) &^ 3
		if next > len(b) {
			break
		}
		b = b[next:]
	}
	return out, nil
}
