package alloc

import (
	"context"
	"slices"
	"testing"

	"github.com/railyard-io/railyard/internal/topology"
	"github.com/railyard-io/railyard/machines"
)

// The positional view agrees with the address API on a real machine model.
func TestIndexPositionalView(t *testing.T) {
	topo, err := machines.Topology(context.Background(), "dgx-1", 2)
	if err != nil {
		t.Fatal(err)
	}
	ix := NewIndex(topo)
	addrs := ix.Devices()
	if ix.Len() != len(addrs) || ix.Len() != 4*(1+2) {
		t.Fatalf("Len %d, Devices %d, want 12 (4 PFs with 2 VFs each)", ix.Len(), len(addrs))
	}
	if !slices.IsSorted(addrs) {
		t.Errorf("devices not in address order: %v", addrs)
	}
	for i, a := range addrs {
		addr, pf := ix.DeviceAt(i)
		if addr != a {
			t.Errorf("DeviceAt(%d) = %s, want %s", i, addr, a)
		}
		nic := topo.NICs[pf]
		if addr != nic.PCI && !slices.ContainsFunc(nic.VFs, func(v topology.VF) bool { return v.PCI == addr }) {
			t.Errorf("device %s is neither PF %s nor one of its VFs", addr, nic.PCI)
		}
		if j, ok := ix.Lookup(a); !ok || j != i {
			t.Errorf("Lookup(%s) = %d, %v; want %d", a, j, ok, i)
		}
	}
	if _, ok := ix.Lookup("0000:ff:1f.7"); ok {
		t.Error("Lookup found a device the model lacks")
	}
	for g, gpu := range topo.GPUs {
		for p, nic := range topo.NICs {
			if got, want := ix.ClassAt(g, p), topo.Class(gpu.PCI, nic.PCI); got != want {
				t.Errorf("ClassAt(%d, %d) = %s, want %s", g, p, got, want)
			}
		}
	}
}
