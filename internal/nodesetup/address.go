package nodesetup

import (
	"fmt"
	"net"
	"strings"
)

// A PF's identity in derived addresses is the vendor-assigned serial in
// the last three bytes of its node GUID (ConnectX GUIDs are
// OUI:03:00:serial, and a GUID made from a MAC is OUI:ff:fe:serial) plus a
// hash of the OUI (the first three bytes), because vendors assign GUIDs
// serially within an OUI and NVIDIA uses many OUIs.

// DeriveGUID returns the node and port GUID of VF vf (0-65535) of a PF
// whose node GUID is pf. Its 62 free bits (all but the U/L and group bits
// of byte 0, which mark it locally administered and unicast) hold:
//
//	22 bits  FNV-1a of the PF's OUI (pf[0:3])
//	24 bits  the PF's serial (pf[5:8])
//	16 bits  the VF index
//
// It is never zero and never a vendor-assigned GUID (those have the U/L bit
// clear). Two VFs share a GUID only when their PFs have the same serial
// and OUIs whose 22-bit hashes collide.
func DeriveGUID(pf [8]byte, vf int) net.HardwareAddr {
	x := uint64(ouiHash(pf)&(1<<22-1))<<40 | uint64(pf[5])<<32 | uint64(pf[6])<<24 | uint64(pf[7])<<16 | uint64(vf&0xffff)
	return pack(x, 8)
}

// MaxMACVF is the highest VF index DeriveMAC encodes.
const MaxMACVF = 1<<12 - 1

// DeriveMAC returns the MAC of Ethernet (RoCE) VF vf (0-4095) of a PF whose
// node GUID is pf. Its 46 free bits hold:
//
//	10 bits  FNV-1a of the PF's OUI
//	24 bits  the PF's serial (pf[5:8])
//	12 bits  the VF index
//
// Two VFs share a MAC only when their PFs have the same serial and OUIs
// whose 10-bit hashes collide (none among the OUIs in the tests).
func DeriveMAC(pf [8]byte, vf int) net.HardwareAddr {
	x := uint64(ouiHash(pf)&(1<<10-1))<<36 | uint64(pf[5])<<28 | uint64(pf[6])<<20 | uint64(pf[7])<<12 | uint64(vf&MaxMACVF)
	return pack(x, 6)
}

func ouiHash(pf [8]byte) uint32 {
	h := uint32(2166136261)
	for _, b := range pf[:3] {
		h = (h ^ uint32(b)) * 16777619
	}
	return h
}

// pack spreads x over n bytes, big-endian, leaving the two low bits of
// byte 0 to the locally-administered (1) and group (0) flags.
func pack(x uint64, n int) net.HardwareAddr {
	out := make(net.HardwareAddr, n)
	rest := 8 * (n - 1)
	out[0] = byte(x>>rest)<<2 | 0x02
	for i := 1; i < n; i++ {
		out[i] = byte(x >> (8 * (n - 1 - i)))
	}
	return out
}

// guidFromMAC is the EUI-64 of a MAC (OUI:ff:fe:NIC), the identity of a
// PF that has no RDMA node GUID.
func guidFromMAC(s string) ([8]byte, error) {
	mac, err := net.ParseMAC(strings.TrimSpace(s))
	if err != nil || len(mac) != 6 {
		return [8]byte{}, fmt.Errorf("MAC %q: not a 6-byte Ethernet address", s)
	}
	return [8]byte{mac[0], mac[1], mac[2], 0xff, 0xfe, mac[3], mac[4], mac[5]}, nil
}

// OpenSMPartition returns the line of OpenSM's partitions.conf that makes
// the port GUIDs full members of partition pkey.
func OpenSMPartition(pkey uint16, guids []net.HardwareAddr) string {
	parts := make([]string, len(guids))
	for i, g := range guids {
		parts[i] = fmt.Sprintf("0x%s=full", strings.ReplaceAll(g.String(), ":", ""))
	}
	return fmt.Sprintf("railyard_%04x=0x%04x, ipoib, defmember=full : %s ;", pkey, pkey, strings.Join(parts, ", "))
}
