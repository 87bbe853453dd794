package nodesetup

import (
	"net"
	"testing"

	"github.com/railyard-io/railyard/internal/sysfs"
)

func TestDeriveGUIDAndMACValues(t *testing.T) {
	t.Parallel()
	pf, _ := sysfs.ParseGUID("0c42:a103:00a1:b2c4")
	h := ouiHash(pf) // FNV-1a of 0c 42 a1
	if h != 0x18a79d1e {
		t.Fatalf("ouiHash = %#x", h)
	}
	// 22 bits of the hash 0x279d1e, serial a1b2c4, VF 3:
	// x = 0x279d1e<<40 | 0xa1b2c4<<16 | 3 = 0x279d1ea1b2c40003;
	// byte 0 = (x>>56)<<2 | 2 = 0x27<<2|2 = 0x9e.
	if g := DeriveGUID(pf, 3).String(); g != "9e:9d:1e:a1:b2:c4:00:03" {
		t.Errorf("GUID = %s", g)
	}
	// 10 bits 0x11e, serial a1b2c4, VF 0x102: x = 0x11e<<36 | 0xa1b2c4<<12 | 0x102
	// = 0x11ea1b2c4102; byte 0 = 0x11<<2|2 = 0x46.
	if m := DeriveMAC(pf, 0x102).String(); m != "46:ea:1b:2c:41:02" {
		t.Errorf("MAC = %s", m)
	}
	if g, err := guidFromMAC("b8:59:9f:01:02:03"); err != nil || net.HardwareAddr(g[:]).String() != "b8:59:9f:ff:fe:01:02:03" {
		t.Errorf("EUI-64 = %x, %v", g, err)
	}
}

// Every VF address of a set of PFs (Mellanox GUIDs of two OUIs, serials
// close together, as on one node or across a rack) is unique, locally
// administered, unicast and never zero.
func TestDerivedAddressesAreUniqueLocalUnicast(t *testing.T) {
	t.Parallel()
	seenG, seenM := map[string]bool{}, map[string]bool{}
	// NVIDIA/Mellanox OUIs seen on ConnectX and BlueField GUIDs and MACs.
	ouis := [][3]byte{{0x00, 0x02, 0xc9}, {0xe4, 0x1d, 0x2d}, {0x24, 0x8a, 0x07}, {0x98, 0x03, 0x9b}, {0x0c, 0x42, 0xa1},
		{0xb8, 0x59, 0x9f}, {0x1c, 0x34, 0xda}, {0x50, 0x6b, 0x4b}, {0xb8, 0x3f, 0xd2}, {0x94, 0x6d, 0xae}, {0x10, 0x70, 0xfd}, {0xa0, 0x88, 0xc2}}
	for _, oui := range ouis {
		for serial := 0; serial < 32; serial++ {
			pf := [8]byte{oui[0], oui[1], oui[2], 0x03, 0x00, 0x5a, byte(serial >> 8), byte(serial)}
			for vf := 0; vf < 64; vf++ {
				g, m := DeriveGUID(pf, vf), DeriveMAC(pf, vf)
				if g[0]&0x03 != 0x02 || m[0]&0x03 != 0x02 {
					t.Fatalf("%s / %s: not locally administered unicast", g, m)
				}
				if seenG[g.String()] || seenM[m.String()] {
					t.Fatalf("duplicate %s / %s (PF %x VF %d)", g, m, pf, vf)
				}
				seenG[g.String()], seenM[m.String()] = true, true
			}
		}
	}
}

func TestOpenSMPartition(t *testing.T) {
	t.Parallel()
	got := OpenSMPartition(0x8001, []net.HardwareAddr{{0xee, 3, 0, 0xa1, 0xb2, 0xc4, 0, 0}, {0xee, 3, 0, 0xa1, 0xb2, 0xc4, 0, 1}})
	if want := "railyard_8001=0x8001, ipoib, defmember=full : 0xee0300a1b2c40000=full, 0xee0300a1b2c40001=full ;"; got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}
