package jobrails_test

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	resourceapi "k8s.io/api/resource/v1"

	"github.com/railyard-io/railyard/internal/dra"
	"github.com/railyard-io/railyard/internal/dra/gpustandin"
	"github.com/railyard-io/railyard/internal/jobrails"
)

// roomOn lists the nodes where the real allocator allocates the template
// of set now.
func (c *cluster) roomOn(t *testing.T, set jobrails.Set, tols []resourceapi.DeviceToleration) []string {
	t.Helper()
	tmpl, err := jobrails.ClaimTemplate("job", "default", set, jobrails.Options{GPUClass: gpustandin.DeviceClassName, Tolerations: tols})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, n := range c.nodes {
		if c.allocate(t, claimOf("job-pod", tmpl.Spec.Spec), n) != nil {
			out = append(out, n)
		}
	}
	return out
}

// The firmware policy refused node-b's rail-2 NIC, and the agent (device
// taints on) publishes its VFs with a NoSchedule taint. The real
// allocator gives rails 0,2 nothing on node-b; jobrails used to count the
// tainted VFs as free and answer "rails 0,2: room on 2 of 2 nodes", and
// the job's second pod stayed Pending. Now: room on node-a only, the
// taints named on the rail, and the job goes to rails 0,4; a template
// that tolerates the taint has room on both, as the allocator agrees.
func TestTaintedNICsAreNotFree(t *testing.T) {
	t.Parallel()
	c := build(t, "roce-8gpu-4nic", nil, dra.Options{TaintUnhealthy: true}, refuse("node-b", 2), "node-a", "node-b")
	inv := c.inventory()
	choice, err := jobrails.ChooseSet(inv, 2, 4, []int64{0, 2})
	if !errors.Is(err, jobrails.ErrNoRoom) {
		t.Errorf("rails 0,2 for 2 pods: %v, want ErrNoRoom", err)
	}
	want := c.roomOn(t, choice.Set, nil)
	if diff := cmp.Diff([]string{"node-a"}, want); diff != "" {
		t.Fatalf("the real allocator's room on rails 0,2 (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, choice.Nodes); diff != "" {
		t.Errorf("jobrails' room on rails 0,2 (-allocator +jobrails):\n%s", diff)
	}
	if r := inv[1].Rails[2]; r.FreeNICs != 0 || len(r.Tainted) != 2 {
		t.Errorf("node-b rail 2: %d free NIC devices, tainted %q; want 0 and both VFs", r.FreeNICs, r.Tainted)
	}
	best, err := jobrails.Choose(inv, 2, 4)
	if err != nil || best.Set.String() != "0,4" || len(best.Nodes) != 2 {
		t.Errorf("Choose: %s on %v, %v; want 0,4 (the lowest set without rail 2) on both nodes", best.Set, best.Nodes, err)
	}

	tolerant := c.inventory(tolerateUnhealthy...)
	choice, err = jobrails.ChooseSet(tolerant, 2, 4, []int64{0, 2})
	if err != nil {
		t.Fatalf("rails 0,2 tolerating %s: %v", dra.TaintKey, err)
	}
	if diff := cmp.Diff(c.roomOn(t, choice.Set, tolerateUnhealthy), choice.Nodes); diff != "" || len(choice.Nodes) != 2 {
		t.Errorf("tolerating: room (-allocator +jobrails):\n%s", diff)
	}
}

// Node-b's GPU driver republishes (a new generation of its pool; the old
// slices are still listed until it deletes them). The allocator uses the
// newest generation only; jobrails used to count both, saw 4 GPUs on each
// of node-b's rails (no whole rails of 2) and answered "no rail set has
// room" for a job of two 4-GPU pods that both nodes take.
func TestOnlyTheNewestGenerationCounts(t *testing.T) {
	t.Parallel()
	c := newCluster(t, "roce-8gpu-4nic", "node-a", "node-b")
	c.republish("node-b", gpustandin.DriverName, nil)
	inv := c.inventory()
	for _, r := range inv[1].Rails {
		if r.GPUs != 2 {
			t.Errorf("node-b rail %d: %d GPUs, want 2", r.Rail, r.GPUs)
		}
	}
	choice, err := jobrails.Choose(inv, 2, 4)
	if err != nil {
		t.Fatalf("Choose: %v", err)
	}
	if diff := cmp.Diff(c.roomOn(t, choice.Set, nil), choice.Nodes); diff != "" || len(choice.Nodes) != 2 {
		t.Errorf("rails %s: room (-allocator +jobrails):\n%s", choice.Set, diff)
	}
}

// A pool of which fewer slices of its newest generation are listed than
// its resourceSliceCount says is incomplete: the allocator takes none of
// its devices (as kube-scheduler's GatherPools), so node-b, whose GPU
// pool is half published, has no room; jobrails used to count its GPUs.
func TestIncompletePoolsHaveNoRoom(t *testing.T) {
	t.Parallel()
	c := newCluster(t, "roce-8gpu-4nic", "node-a", "node-b")
	for _, s := range c.slices {
		if *s.Spec.NodeName == "node-b" && s.Spec.Driver == gpustandin.DriverName {
			s.Spec.Pool.Generation, s.Spec.Pool.ResourceSliceCount = 2, 2
		}
	}
	inv := c.inventory()
	choice, err := jobrails.ChooseSet(inv, 1, 4, []int64{0, 2})
	if err != nil {
		t.Fatal(err)
	}
	want := c.roomOn(t, choice.Set, nil)
	if diff := cmp.Diff([]string{"node-a"}, want); diff != "" {
		t.Fatalf("the real allocator's room (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, choice.Nodes); diff != "" {
		t.Errorf("jobrails' room (-allocator +jobrails):\n%s", diff)
	}
	if len(inv[1].Notes) != 1 || inv[1].Rails[0].FreeGPUs != 0 {
		t.Errorf("node-b: notes %q, rail 0 free GPUs %d; want the incomplete pool named and none free", inv[1].Notes, inv[1].Rails[0].FreeGPUs)
	}
}

// A shared pool publishes each NIC once with consumable capacity (shares,
// KEP-5075): one NIC takes the NIC requests of both GPUs of its rail, one
// share each, while shares last. jobrails used to count a shared NIC as
// one device, free or held: it found no room for a 2-GPU rail anywhere,
// and none once any claim held a share. Now its free NIC requests are its
// shares left, as the allocator counts them.
func TestSharedNICsCountTheirSharesLeft(t *testing.T) {
	t.Parallel()
	c := build(t, "roce-8gpu-4nic", sharedPool(3), dra.Options{ConsumableCapacity: true}, nil, "node-a", "node-b")
	if n, _ := c.schedule(t, sharesClaim("one-share", 2, 1), "node-a"); n != "node-b" {
		t.Fatalf("the shares claim landed on %q", n)
	}
	inv := c.inventory()
	if got := inv[1].Rails[2].FreeNICs; got != 2 {
		t.Errorf("node-b rail 2: %d free NIC requests, want the 2 shares left", got)
	}
	choice, err := jobrails.ChooseSet(inv, 2, 4, []int64{0, 2})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(c.roomOn(t, choice.Set, nil), choice.Nodes); diff != "" || len(choice.Nodes) != 2 {
		t.Errorf("rails 0,2: room (-allocator +jobrails):\n%s", diff)
	}
}
