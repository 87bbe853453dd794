//go:build linux

package netops

import (
	"testing"

	"github.com/vishvananda/netlink/nl"
)

// vfInfoList builds an IFLA_VFINFO_LIST payload as the kernel sends it
// (rtnl_fill_vfinfo): per VF an IFLA_VF_INFO holding IFLA_VF_MAC and, for
// IPoIB PFs, IFLA_VF_IB_NODE_GUID and IFLA_VF_IB_PORT_GUID.
func vfInfoList(withGUIDs bool) []byte {
	list := nl.NewRtAttr(0, nil)
	for vf := uint32(0); vf < 3; vf++ {
		info := list.AddRtAttr(nl.IFLA_VF_INFO, nil)
		mac := nl.VfMac{Vf: vf}
		copy(mac.Mac[:], []byte{0x02, 0xaa, 0xbb, 0xcc, 0x00, byte(vf)})
		info.AddRtAttr(nl.IFLA_VF_MAC, mac.Serialize())
		if withGUIDs {
			node := nl.VfGUID{Vf: vf, GUID: 0x0200000000000100 | uint64(vf)}
			port := nl.VfGUID{Vf: vf, GUID: 0x0200000000000200 | uint64(vf)}
			info.AddRtAttr(nl.IFLA_VF_IB_NODE_GUID, node.Serialize())
			info.AddRtAttr(nl.IFLA_VF_IB_PORT_GUID, port.Serialize())
		}
	}
	return list.Serialize()[4:] // the payload, without the list's own header
}

func TestParseVFAddressesFromKernelMessage(t *testing.T) {
	got, ok, err := parseVFAddresses(vfInfoList(true), 2)
	if err != nil || !ok {
		t.Fatalf("ok=%v err=%v", ok, err)
	}
	if got.MAC.String() != "02:aa:bb:cc:00:02" || got.NodeGUID.String() != "02:00:00:00:00:00:01:02" || got.PortGUID.String() != "02:00:00:00:00:00:02:02" {
		t.Fatalf("VF 2 = %+v", got)
	}
	got, ok, err = parseVFAddresses(vfInfoList(false), 0)
	if err != nil || !ok || got.NodeGUID != nil || got.MAC.String() != "02:aa:bb:cc:00:00" {
		t.Fatalf("Ethernet VF 0 = %+v ok=%v err=%v", got, ok, err)
	}
	if _, ok, err := parseVFAddresses(vfInfoList(true), 7); ok || err != nil {
		t.Fatalf("VF 7: ok=%v err=%v", ok, err)
	}
}

func FuzzParseVFAddresses(f *testing.F) {
	f.Add(vfInfoList(true), 1)
	f.Add(vfInfoList(false), 0)
	f.Fuzz(func(t *testing.T, b []byte, vf int) {
		got, ok, err := parseVFAddresses(b, vf)
		if ok && err != nil {
			t.Fatalf("ok with error %v", err)
		}
		if got.MAC != nil && len(got.MAC) != 6 || got.NodeGUID != nil && len(got.NodeGUID) != 8 {
			t.Fatalf("bad lengths %+v", got)
		}
	})
}
