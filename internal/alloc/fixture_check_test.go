package alloc

import (
	"testing"

	"github.com/railyard-io/railyard/internal/topology"
)

// TestFixtureClasses checks that the hand-built DGX-1-like node has the
// classes the policy tests rely on.
func TestFixtureClasses(t *testing.T) {
	topo := dgx1Like(nicOpts{vfs: 2})
	if len(topo.GPUs) != 8 || len(topo.NICs) != 4 {
		t.Fatalf("got %d GPUs, %d NICs", len(topo.GPUs), len(topo.NICs))
	}
	want := [][]topology.Class{
		{topology.PIX, topology.NODE, topology.SYS, topology.SYS},
		{topology.PIX, topology.NODE, topology.SYS, topology.SYS},
		{topology.NODE, topology.PIX, topology.SYS, topology.SYS},
		{topology.NODE, topology.PIX, topology.SYS, topology.SYS},
		{topology.SYS, topology.SYS, topology.PIX, topology.NODE},
		{topology.SYS, topology.SYS, topology.PIX, topology.NODE},
		{topology.SYS, topology.SYS, topology.NODE, topology.PIX},
		{topology.SYS, topology.SYS, topology.NODE, topology.PIX},
	}
	for g, row := range want {
		for n, c := range row {
			if got := topo.Class(topo.GPUs[g].PCI, topo.NICs[n].PCI); got != c {
				t.Errorf("class(GPU%d, NIC%d) = %v, want %v", g, n, got, c)
			}
			if got := topo.Class(topo.GPUs[g].PCI, topo.NICs[n].VFs[1].PCI); got != c {
				t.Errorf("class(GPU%d, NIC%d VF1) = %v, want %v", g, n, got, c)
			}
		}
	}
}
