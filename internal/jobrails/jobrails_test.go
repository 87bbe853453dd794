package jobrails_test

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/dynamic-resource-allocation/structured"

	"github.com/railyard-io/railyard/api/config/v1alpha1"
	"github.com/railyard-io/railyard/internal/dra"
	"github.com/railyard-io/railyard/internal/dra/gpustandin"
	"github.com/railyard-io/railyard/internal/jobrails"
	"github.com/railyard-io/railyard/machines"
)

// cluster is nodes of one machine model (Railyard's VF pool, 2 VFs per
// PF, and the stand-in GPU driver's slices) and the devices claims hold:
// a scheduler with the real DRA allocator, one pod at a time.
type cluster struct {
	nodes  []string
	slices []*resourceapi.ResourceSlice
	inUse  sets.Set[structured.DeviceID]
	attrs  map[structured.DeviceID]resourceapi.Device
}

func newCluster(t *testing.T, machine string, nodes ...string) *cluster {
	t.Helper()
	topo, err := machines.Topology(context.Background(), machine, 2)
	if err != nil {
		t.Fatal(err)
	}
	c := &cluster{nodes: nodes, inUse: sets.New[structured.DeviceID](), attrs: map[structured.DeviceID]resourceapi.Device{}}
	for _, n := range nodes {
		pools, err := dra.Build(n, topo, []v1alpha1.Pool{{Name: "railyard.io/rdma", DeviceKind: "vf"}}, dra.Options{})
		if err != nil {
			t.Fatal(err)
		}
		c.slices = append(c.slices, dra.ResourceSlices(n, pools, 1)...)
		c.slices = append(c.slices, gpustandin.ResourceSlices(n, topo)...)
	}
	for _, s := range c.slices {
		for _, d := range s.Spec.Devices {
			c.attrs[structured.MakeDeviceID(s.Spec.Driver, s.Spec.Pool.Name, d.Name)] = d
		}
	}
	return c
}

// schedule places claim as kube-scheduler's DRA plugin does: the first
// node (in name order) where the real allocator satisfies it. It returns
// the node and the allocation's devices, and marks them in use.
// Nodes in avoid are skipped (the job's pod anti-affinity: one pod of a
// job per node, as MPI jobs are usually spread).
func (c *cluster) schedule(t *testing.T, claim *resourceapi.ResourceClaim, avoid ...string) (string, []resourceapi.DeviceRequestAllocationResult) {
	t.Helper()
	for _, n := range c.nodes {
		if slices.Contains(avoid, n) {
			continue
		}
		a, err := structured.NewAllocator(context.Background(), structured.Features{AdminAccess: true, PrioritizedList: true},
			structured.AllocatedState{AllocatedDevices: c.inUse},
			gpustandin.NewClasses(),
			c.slices, cel.NewCache(10, cel.Features{}))
		if err != nil {
			t.Fatal(err)
		}
		res, err := a.Allocate(context.Background(), &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}}, []*resourceapi.ResourceClaim{claim})
		if err != nil {
			t.Fatalf("allocate %s on %s: %v", claim.Name, n, err)
		}
		if len(res) == 0 {
			continue
		}
		for _, r := range res[0].Devices.Results {
			c.inUse.Insert(structured.MakeDeviceID(r.Driver, r.Pool, r.Device))
		}
		return n, res[0].Devices.Results
	}
	return "", nil
}

// rails are the railyard.io/rail values of the NICs of an allocation,
// sorted, and whether every GPU shares its pcieRoot with its NIC.
func (c *cluster) rails(t *testing.T, results []resourceapi.DeviceRequestAllocationResult) ([]int64, bool) {
	t.Helper()
	roots := map[string]string{} // request -> root
	var rails []int64
	for _, r := range results {
		d := c.attrs[structured.MakeDeviceID(r.Driver, r.Pool, r.Device)]
		roots[r.Request] = *d.Attributes[dra.AttrPCIeRoot].StringValue
		if r.Driver == dra.DriverName {
			rails = append(rails, *d.Attributes[dra.AttrRail].IntValue)
		}
	}
	aligned := true
	for req, root := range roots {
		if i, ok := cutPrefix(req, "gpu"); ok {
			aligned = aligned && roots["nic"+i] == root
		}
	}
	slices.Sort(rails)
	return slices.Compact(rails), aligned
}

func cutPrefix(s, p string) (string, bool) {
	if len(s) > len(p) && s[:len(p)] == p {
		return s[len(p):], true
	}
	return "", false
}

// perPodClaim is today's per-pod claim (dranet's documented pattern):
// n GPUs, each with a NIC on its pcieRoot, nothing about rails.
func perPodClaim(name string, n int) *resourceapi.ResourceClaim {
	root := resourceapi.FullyQualifiedName(dra.AttrPCIeRoot)
	spec := resourceapi.ResourceClaimSpec{}
	for i := range n {
		g, nic := "gpu"+strconv.Itoa(i), "nic"+strconv.Itoa(i)
		spec.Devices.Requests = append(spec.Devices.Requests, exactly(g, gpustandin.DeviceClassName), exactly(nic, dra.DeviceClassName))
		spec.Devices.Constraints = append(spec.Devices.Constraints, resourceapi.DeviceConstraint{Requests: []string{g, nic}, MatchAttribute: &root})
	}
	return claimOf(name, spec)
}

func exactly(name, class string) resourceapi.DeviceRequest {
	return resourceapi.DeviceRequest{Name: name, Exactly: &resourceapi.ExactDeviceRequest{
		DeviceClassName: class, AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 1}}
}

func claimOf(name string, spec resourceapi.ResourceClaimSpec) *resourceapi.ResourceClaim {
	return &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)}, Spec: spec}
}

// allocated is what the cluster's claims hold, as jobrails reads it from
// the claims' allocation results.
func (c *cluster) allocated() map[jobrails.Device]bool {
	out := map[jobrails.Device]bool{}
	for id := range c.inUse {
		out[jobrails.Device{Driver: id.Driver.String(), Pool: id.Pool.String(), Name: id.Device.String()}] = true
	}
	return out
}

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
		c.nodes = []string{"node-b"}
		if n, _ := c.schedule(t, perPodClaim("other", 4)); n != "node-b" {
			t.Fatalf("the other pod landed on %q", n)
		}
		c.nodes = []string{"node-a", "node-b"}
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
	choice, err := jobrails.Choose(jobrails.Inventory(c.slices, gpustandin.DriverName, c.allocated()), 2, 4)
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
	choice, err := jobrails.Choose(jobrails.Inventory(c.slices, gpustandin.DriverName, c.allocated()), 1, 2)
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
	inv := jobrails.Inventory(c.slices, gpustandin.DriverName, nil)
	if len(inv) != 3 {
		t.Fatalf("%d nodes", len(inv))
	}
	for _, n := range inv {
		want := map[int64]*jobrails.Rail{}
		for r, gpus := range map[int64][]string{0: {"0000:06:00.0", "0000:07:00.0"}, 2: {"0000:0a:00.0", "0000:0b:00.0"},
			4: {"0000:85:00.0", "0000:86:00.0"}, 6: {"0000:89:00.0", "0000:8a:00.0"}} {
			want[r] = &jobrails.Rail{Rail: r, GPUs: 2, FreeGPUs: 2, FreeNICs: 2, BusIDs: gpus}
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
