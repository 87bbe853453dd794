package alloc

import (
	"fmt"
	"testing"

	"github.com/railyard-io/railyard/internal/pciaddr"
	"github.com/railyard-io/railyard/internal/topology"
)

// TestVMDDomainsInAddressOrder: devices in domains wider than four digits
// (Intel VMD) sort after domain ffff, as pciaddr orders addresses (string
// order put them first), and are found through the fast path too.
func TestVMDDomainsInAddressOrder(t *testing.T) {
	var in topology.Inventory
	for _, pf := range []string{"10000:01:00.0", "ffff:01:00.0", "0000:18:00.0"} {
		dom := pf[:len(pf)-len(":01:00.0")]
		in.NICs = append(in.NICs, topology.NIC{PCI: pf, Vendor: 0x15b3, NUMA: 0,
			VFs: []topology.VF{{Index: 0, PCI: dom + ":01:00.1"}, {Index: 1, PCI: dom + ":01:00.2"}}})
	}
	in.NICs[2].VFs = []topology.VF{{Index: 0, PCI: "0000:18:00.1"}}
	ix := NewIndex(topology.Build(in))
	want := "[0000:18:00.0 0000:18:00.1 ffff:01:00.0 ffff:01:00.1 ffff:01:00.2 10000:01:00.0 10000:01:00.1 10000:01:00.2]"
	if got := fmt.Sprint(ix.Devices()); got != want {
		t.Errorf("Devices() = %s, want %s", got, want)
	}
	for i, d := range ix.Devices() {
		j, ok := ix.lookup(d)
		if !ok || int(j) != i {
			t.Errorf("lookup(%q) = %d, %v; want %d", d, j, ok, i)
		}
	}
	if tab := ix.byRID[0x10000]; tab == nil || tab[(pciaddr.Addr{Bus: 1, Function: 2}).RID()] == 0 {
		t.Error("domain 10000 has no fast-path table")
	}
	for _, id := range []string{"10000:01:00.3", "10000:01:00.2-s1", "10000:01:00.2 ", "0000:18:00.2"} {
		if j, ok := ix.lookup(id); ok {
			t.Errorf("lookup(%q) = %d, want not found", id, j)
		}
	}
}

// TestLookupFallsBack checks that IDs outside the fast path still resolve.
func TestLookupFallsBack(t *testing.T) {
	topo := dgx1Like(nicOpts{vfs: 2})
	ix := NewIndex(topo)
	for _, d := range ix.Devices() {
		i, ok := ix.lookup(d)
		if !ok || ix.devs[i].addr != d {
			t.Fatalf("lookup(%q) = %d, %v", d, i, ok)
		}
	}
	if _, ok := ix.lookup("0000:00:00.0"); ok {
		t.Error("found a device that does not exist")
	}
}

func TestRankConstants(t *testing.T) {
	if unknownRank != topology.ClassUnknown.Rank() {
		t.Errorf("unknownRank %d, topology says %d", unknownRank, topology.ClassUnknown.Rank())
	}
	if unhealthyRank <= unknownRank {
		t.Error("an unhealthy device must rank after an unknown one")
	}
}
