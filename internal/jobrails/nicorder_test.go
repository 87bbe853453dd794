package jobrails_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/railyard-io/railyard/internal/jobrails"
	"github.com/railyard-io/railyard/machines"
)

// NIC order read from the slices (each rail's PF address) is the
// topology's own: its rail NICs in PCI address order (topology.NICs is
// sorted by address), numbered from 0, as NVIDIA's operators number rails.
func TestNICOrderIsTheTopologysNICOrder(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		machine string
		want    map[int64]int64 // NIC rail -> Railyard rail
	}{
		{"roce-8gpu-4nic", map[int64]int64{0: 0, 1: 2, 2: 4, 3: 6}},
		{"dgx-h100", map[int64]int64{0: 0, 1: 1, 2: 2, 3: 3, 4: 4, 5: 5, 6: 6, 7: 7}},
		{"dgx-1", nil},
		{"dgx-a100", nil},
	} {
		t.Run(tc.machine, func(t *testing.T) {
			t.Parallel()
			topo, err := machines.Topology(context.Background(), tc.machine, 2)
			if err != nil {
				t.Fatal(err)
			}
			fromTopo := map[int64]int64{}
			rails := topo.NICRails()
			for _, n := range topo.NICs { // PCI address order
				if r, ok := rails[n.PCI]; ok {
					fromTopo[int64(len(fromTopo))] = int64(r)
				}
			}
			if tc.want != nil {
				if diff := cmp.Diff(tc.want, fromTopo); diff != "" {
					t.Errorf("topology's NIC order (-want +got):\n%s", diff)
				}
			}
			c := newCluster(t, tc.machine, "node-a", "node-b")
			got, err := jobrails.NICOrder(c.inventory())
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(fromTopo, got); diff != "" {
				t.Errorf("NICOrder from the slices (-topology +slices):\n%s", diff)
			}
		})
	}
}

// A cluster of two models numbers NIC rails differently (the 8-GPU/4-NIC
// node's NIC rail 1 is rail 2, the DGX H100's rail 1): naming rails in
// NIC order is refused there, with both nodes named.
func TestNICOrderRefusesMixedModels(t *testing.T) {
	t.Parallel()
	a := newCluster(t, "roce-8gpu-4nic", "node-a")
	b := newCluster(t, "dgx-h100", "node-b")
	a.slices = append(a.slices, b.slices...)
	_, err := jobrails.NICOrder(a.inventory())
	if !errors.Is(err, jobrails.ErrInput) || err.Error() == "" {
		t.Fatalf("mixed models: %v, want ErrInput", err)
	}
	t.Log(err)
}

func TestFromNICOrder(t *testing.T) {
	t.Parallel()
	order := map[int64]int64{0: 0, 1: 2, 2: 4, 3: 6}
	got, err := jobrails.FromNICOrder(order, []int64{2, 1})
	if err != nil || !cmp.Equal(got, []int64{2, 4}) {
		t.Errorf("NIC rails 2,1: %v, %v; want rails 2,4", got, err)
	}
	if _, err := jobrails.FromNICOrder(order, []int64{4}); !errors.Is(err, jobrails.ErrInput) {
		t.Errorf("NIC rail 4 of 4 NICs: %v, want ErrInput", err)
	}
	s := jobrails.Set{{Rail: 2}, {Rail: 6}}
	if got, err := s.InNICOrder(jobrails.RailToNIC(order)); err != nil || got != "1,3" {
		t.Errorf("rails 2,6 in NIC order: %q, %v; want 1,3", got, err)
	}
}
