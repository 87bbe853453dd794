package pool

import (
	"context"
	"testing"

	"github.com/railyard-io/railyard/api/config/v1alpha1"
	"github.com/railyard-io/railyard/internal/alloc"
	"github.com/railyard-io/railyard/internal/discovery"
	"github.com/railyard-io/railyard/internal/fakesysfs"
	"github.com/railyard-io/railyard/machines"
)

// TestPoolsAndPoliciesAgreeOnHealth: pools (what kubelet is told) and
// allocation policies (what they prefer) judge every PF and VF by the one
// rule in topology, on a generated DGX H100 with a PF's port down and a
// VF's own port down. The pool's only extra condition is a verbs device.
func TestPoolsAndPoliciesAgreeOnHealth(t *testing.T) {
	root := t.TempDir()
	if err := machines.WriteSysfs("dgx-h100", root, 2); err != nil {
		t.Fatal(err)
	}
	if err := fakesysfs.SetPortState(root, "mlx5_0", 1, fakesysfs.PortDown); err != nil {
		t.Fatal(err)
	}
	vfs := selectIn(t, root, v1alpha1.Pool{DeviceKind: "vf", Selectors: v1alpha1.Selectors{PFNames: []string{"ibp64s0"}}})
	if len(vfs) == 0 {
		t.Fatal("no VFs of ibp64s0")
	}
	if err := fakesysfs.SetPortState(root, vfs[0].RDMA, 1, fakesysfs.PortDown); err != nil {
		t.Fatal(err)
	}
	topo, err := discovery.Discover(context.Background(), root)
	if err != nil {
		t.Fatal(err)
	}
	ix := alloc.NewIndex(topo)
	unhealthy := 0
	for _, kind := range []string{v1alpha1.KindPF, v1alpha1.KindVF} {
		s, err := Compile(v1alpha1.Pool{DeviceKind: kind})
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range s.Select(topo) {
			if !d.RDMACapable() {
				continue // the pool's own extra rule
			}
			if d.Healthy != ix.Healthy(d.ID) {
				t.Errorf("%s %s: pool healthy=%v (%s), policies healthy=%v", kind, d.ID, d.Healthy, d.Reason, ix.Healthy(d.ID))
			}
			if !d.Healthy {
				unhealthy++
			}
		}
	}
	// mlx5_0's PF and its 2 VFs, and ibp64s0's first VF.
	if unhealthy != 4 {
		t.Errorf("%d unhealthy devices, want 4", unhealthy)
	}
}
