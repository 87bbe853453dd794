package jobrails_test

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/railyard-io/railyard/internal/dra/gpustandin"
	"github.com/railyard-io/railyard/internal/jobrails"
	"github.com/railyard-io/railyard/machines"
)

// TestJobOfTwoPodsGetsOneRailSetWithTheRealAllocator: two roce-8gpu-4nic
// nodes (rails 0, 2, 4, 6; two GPUs and one NIC per rail); another pod
// already holds 4 GPUs of node-b, placed by the per-pod claim. A job of
// two 4-GPU pods:
//
//   - per-pod claims (today's pattern) put pod 1 on node-a's rails 0 and 2
//     (first fit) and pod 2 on node-b's free rails 4 and 6: the pods cannot
//     reach each other over isolated rails (ai-dynamo/dynamo#13596);
//   - the job's template from Choose pins rails 4 and 6, the set with room
//     on both nodes: both pods get rails 4 and 6, each GPU on the NIC of
//     its root.
//
// The scheduling is the real allocator's (k8s.io/dynamic-resource-
// allocation, as kube-scheduler runs it), node by node in name order;
// faked: the nodes (a machine model's ResourceSlices) and the GPU driver
// (Railyard's stand-in, which publishes pcieRoot as NVIDIA's does).
func TestJobOfTwoPodsGetsOneRailSetWithTheRealAllocator(t *testing.T) {
	t.Parallel()
	setup := func() *cluster {
		c := newCluster(t, "roce-8gpu-4nic", "node-a", "node-b")
		if n, _ := c.schedule(t, perPodClaim("other", 4), "node-a"); n != "node-b" {
			t.Fatalf("the other pod landed on %q", n)
		}
		return c
	}

	c := setup()
	var perPod [][]int64
	var used []string
	for i := range 2 {
		n, res := c.schedule(t, perPodClaim("job-pod-"+strconv.Itoa(i), 4), used...)
		used = append(used, n)
		rails, aligned := c.rails(t, res)
		if n == "" || !aligned {
			t.Fatalf("per-pod claim %d: node %q aligned %v", i, n, aligned)
		}
		t.Logf("per-pod claim: pod %d on %s, rails %v", i, n, rails)
		perPod = append(perPod, rails)
	}
	if slices.Equal(perPod[0], perPod[1]) {
		t.Fatalf("per-pod claims gave both pods rails %v: the baseline should show the split", perPod[0])
	}

	c = setup()
	choice, err := jobrails.Choose(c.inventory(), 2, 4)
	if err != nil {
		t.Fatal(err)
	}
	if got := choice.Set.String(); got != "4,6" || !slices.Equal(choice.Nodes, []string{"node-a", "node-b"}) {
		t.Fatalf("Choose: rails %s with room on %v, want 4,6 on both nodes", got, choice.Nodes)
	}
	tmpl, err := jobrails.ClaimTemplate("job", "default", choice.Set, jobrails.Options{GPUClass: gpustandin.DeviceClassName})
	if err != nil {
		t.Fatal(err)
	}
	var nodes []string
	for i := range 2 {
		n, res := c.schedule(t, claimOf("job-pod-"+strconv.Itoa(i), tmpl.Spec.Spec), nodes...)
		rails, aligned := c.rails(t, res)
		if diff := cmp.Diff([]int64{4, 6}, rails); diff != "" || !aligned {
			t.Fatalf("job pod %d on %q: rails (-want +got)\n%s aligned %v", i, n, diff, aligned)
		}
		nodes = append(nodes, n)
	}
	if nodes[0] == nodes[1] {
		t.Fatalf("both pods on %s", nodes[0])
	}
	// A third pod of the job has no room: rails 4 and 6 are taken on both
	// nodes (even without the anti-affinity).
	if n, _ := c.schedule(t, claimOf("job-pod-2", tmpl.Spec.Spec)); n != "" {
		t.Fatalf("a third pod on rails 4,6 was placed on %s", n)
	}
}

// A node whose Railyard pool also holds NICs that are no GPU's rail (the
// DGX H100's storage and E810 ports: no railyard.io/rail attribute) still
// takes the job's claim: its selectors skip a device without the
// attribute instead of failing on it (CEL errors on a missing key, and the
// real allocator fails the claim on the node). Before the guard this
// failed with "CEL runtime error: no such key: rail".
func TestTemplateAllocatesBesideNICsWithoutARail(t *testing.T) {
	t.Parallel()
	c := newCluster(t, "dgx-h100", "node-a")
	choice, err := jobrails.Choose(c.inventory(), 1, 2)
	if err != nil {
		t.Fatal(err)
	}
	tmpl, err := jobrails.ClaimTemplate("job", "default", choice.Set, jobrails.Options{GPUClass: gpustandin.DeviceClassName})
	if err != nil {
		t.Fatal(err)
	}
	n, res := c.schedule(t, claimOf("job-pod-0", tmpl.Spec.Spec))
	rails, aligned := c.rails(t, res)
	if n != "node-a" || !aligned || len(rails) != 2 {
		t.Fatalf("node %q, rails %v, aligned %v: want both GPUs with their rails' NICs", n, rails, aligned)
	}
}

func TestChooseTablesAndErrors(t *testing.T) {
	t.Parallel()
	c := newCluster(t, "roce-8gpu-4nic", "node-a", "node-b", "node-c")
	inv := c.inventory()
	if len(inv) != 3 {
		t.Fatalf("%d nodes", len(inv))
	}
	topo, err := machines.Topology(context.Background(), "roce-8gpu-4nic", 2)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range inv {
		want := map[int64]*jobrails.Rail{}
		for r, gpus := range map[int64][]string{0: {"0000:06:00.0", "0000:07:00.0"}, 2: {"0000:0a:00.0", "0000:0b:00.0"},
			4: {"0000:85:00.0", "0000:86:00.0"}, 6: {"0000:89:00.0", "0000:8a:00.0"}} {
			want[r] = &jobrails.Rail{Rail: r, GPUs: 2, FreeGPUs: 2, FreeNICs: 2, BusIDs: gpus, PF: nicOfRail(topo, int(r))}
		}
		if diff := cmp.Diff(want, n.Rails); diff != "" {
			t.Fatalf("%s rails (-want +got)\n%s", n.Name, diff)
		}
	}
	for _, tc := range []struct {
		pods, gpus int
		want       string
		err        error
	}{
		{1, 2, "0", nil},
		{3, 4, "0,2", nil},
		{3, 8, "0,2,4,6", nil},
		{4, 4, "0,2", jobrails.ErrNoRoom}, // 3 nodes
		{1, 3, "", jobrails.ErrNoRoom},    // rails have 2 GPUs each
		{0, 4, "", jobrails.ErrInput},
		{2, 0, "", jobrails.ErrInput},
	} {
		got, err := jobrails.Choose(inv, tc.pods, tc.gpus)
		if !errors.Is(err, tc.err) || got.Set.String() != tc.want {
			t.Errorf("Choose(%d pods, %d GPUs) = %s, %v; want %s, %v", tc.pods, tc.gpus, got.Set, err, tc.want, tc.err)
		}
	}
	if _, err := jobrails.ClaimTemplate("x", "y", nil, jobrails.Options{}); !errors.Is(err, jobrails.ErrInput) {
		t.Errorf("empty set: %v", err)
	}
}
