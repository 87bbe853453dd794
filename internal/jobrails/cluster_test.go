package jobrails_test

import (
	"context"
	"slices"
	"strconv"
	"testing"
	"time"

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
	"github.com/railyard-io/railyard/internal/topology"
	"github.com/railyard-io/railyard/machines"
)

// features137 is the allocator as kube-scheduler 1.37 runs it: device
// taints GA, consumable capacity and partitionable devices beta and on,
// admin access and prioritized lists GA.
var features137 = structured.Features{AdminAccess: true, PrioritizedList: true, ConsumableCapacity: true, DeviceTaints: true, PartitionableDevices: true}

// allocTimeout bounds one allocation (the scheduler's filter timeout).
const allocTimeout = 10 * time.Second

// cluster is nodes of one machine model (Railyard's pools and the stand-in
// GPU driver's slices), the claims allocated on them and the cluster's
// DeviceTaintRules: a scheduler with the real DRA allocator, one pod at a
// time.
type cluster struct {
	nodes  []string
	slices []*resourceapi.ResourceSlice
	claims []*resourceapi.ResourceClaim
	rules  []*resourceapi.DeviceTaintRule
	attrs  map[structured.DeviceID]resourceapi.Device
}

// build makes the nodes' slices: pools (default: Railyard's VF pool) with
// opts, each node's topology first passed to edit (nil: none).
func build(t *testing.T, machine string, pools []v1alpha1.Pool, opts dra.Options, edit func(node string, t *topology.Topology), nodes ...string) *cluster {
	t.Helper()
	if pools == nil {
		pools = []v1alpha1.Pool{{Name: "railyard.io/rdma", DeviceKind: "vf"}}
	}
	c := &cluster{nodes: nodes, attrs: map[structured.DeviceID]resourceapi.Device{}}
	for _, n := range nodes {
		topo, err := machines.Topology(context.Background(), machine, 2)
		if err != nil {
			t.Fatal(err)
		}
		if edit != nil {
			edit(n, topo)
		}
		ps, err := dra.Build(n, topo, pools, opts)
		if err != nil {
			t.Fatal(err)
		}
		c.slices = append(c.slices, dra.ResourceSlices(n, ps, 1)...)
		c.slices = append(c.slices, gpustandin.ResourceSlices(n, topo)...)
	}
	for _, s := range c.slices {
		for _, d := range s.Spec.Devices {
			c.attrs[structured.MakeDeviceID(s.Spec.Driver, s.Spec.Pool.Name, d.Name)] = d
		}
	}
	return c
}

func newCluster(t *testing.T, machine string, nodes ...string) *cluster {
	t.Helper()
	return build(t, machine, nil, dra.Options{}, nil, nodes...)
}

// state is what kube-scheduler knows of the allocated claims
// (AllocatedState, gathered as its DRA plugin does): whole devices, shares
// of shared devices and the capacity they consume; adminAccess results
// hold nothing.
func (c *cluster) state() structured.AllocatedState {
	s := structured.AllocatedState{
		AllocatedDevices:         sets.New[structured.DeviceID](),
		AllocatedSharedDeviceIDs: sets.New[structured.SharedDeviceID](),
		AggregatedCapacity:       structured.NewConsumedCapacityCollection(),
	}
	for _, cl := range c.claims {
		for _, r := range cl.Status.Allocation.Devices.Results {
			if r.AdminAccess != nil && *r.AdminAccess {
				continue
			}
			id := structured.MakeDeviceID(r.Driver, r.Pool, r.Device)
			if r.ShareID == nil {
				s.AllocatedDevices.Insert(id)
				continue
			}
			s.AllocatedSharedDeviceIDs.Insert(structured.MakeSharedDeviceID(id, r.ShareID))
			s.AggregatedCapacity.Insert(structured.NewDeviceConsumedCapacity(id, r.ConsumedCapacity))
		}
	}
	return s
}

// schedulerSlices are the slices as the scheduler's allocator sees them:
// each DeviceTaintRule's taint added to the devices it selects (what
// kube-scheduler's slice tracker does).
func (c *cluster) schedulerSlices() []*resourceapi.ResourceSlice {
	if len(c.rules) == 0 {
		return c.slices
	}
	out := make([]*resourceapi.ResourceSlice, len(c.slices))
	for i, s := range c.slices {
		s = s.DeepCopy()
		for j := range s.Spec.Devices {
			d := &s.Spec.Devices[j]
			for _, r := range c.rules {
				sel := r.Spec.DeviceSelector
				if sel.Driver != nil && *sel.Driver != s.Spec.Driver || sel.Pool != nil && *sel.Pool != s.Spec.Pool.Name || sel.Device != nil && *sel.Device != d.Name {
					continue
				}
				d.Taints = append(d.Taints, r.Spec.Taint)
			}
		}
		out[i] = s
	}
	return out
}

// allocate runs the real allocator for claim on node with what the
// cluster's claims hold; nil when it does not fit there.
func (c *cluster) allocate(t *testing.T, claim *resourceapi.ResourceClaim, node string) *resourceapi.AllocationResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), allocTimeout)
	defer cancel()
	classes := gpustandin.NewClasses()
	for _, p := range []string{"railyard.io/rdma", "railyard.io/rdma_shared", "railyard.io/pf"} {
		classes[dra.PoolDeviceClassName(p)] = dra.PoolDeviceClass(p)
	}
	a, err := structured.NewAllocator(ctx, features137, c.state(), classes, c.schedulerSlices(), cel.NewCache(10, cel.Features{}))
	if err != nil {
		t.Fatal(err)
	}
	res, err := a.Allocate(ctx, &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}, []*resourceapi.ResourceClaim{claim})
	if err != nil {
		t.Fatalf("allocate %s on %s: %v", claim.Name, node, err)
	}
	if len(res) == 0 {
		return nil
	}
	return &res[0]
}

// schedule places claim as kube-scheduler's DRA plugin does: the first
// node (in name order, except those in avoid: one pod of a job per node)
// where the real allocator satisfies it; the claim is then allocated
// (held by the cluster). It returns the node and the allocation's devices.
func (c *cluster) schedule(t *testing.T, claim *resourceapi.ResourceClaim, avoid ...string) (string, []resourceapi.DeviceRequestAllocationResult) {
	t.Helper()
	for _, n := range c.nodes {
		if slices.Contains(avoid, n) {
			continue
		}
		if res := c.allocate(t, claim, n); res != nil {
			held := claim.DeepCopy()
			held.Status.Allocation = res
			c.claims = append(c.claims, held)
			return n, res.Devices.Results
		}
	}
	return "", nil
}

// inventory is what jobrails reads from the same cluster.
func (c *cluster) inventory(tols ...resourceapi.DeviceToleration) []jobrails.Node {
	return jobrails.Inventory(jobrails.Cluster{Slices: c.slices, Claims: c.claims, TaintRules: c.rules},
		jobrails.InventoryOptions{GPUDriver: gpustandin.DriverName, Tolerations: tols})
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

// nicOfRail is the PCI address of the NIC of rail on t.
func nicOfRail(t *topology.Topology, rail int) string {
	for pci, r := range t.NICRails() {
		if r == rail {
			return pci
		}
	}
	return ""
}

// refuse marks the NIC of rail refused on node (the firmware policy),
// after rails were assigned: a NIC closer to its GPUs than any other keeps
// its rail when refused (rails weigh class before health), as on the
// machines used here.
func refuse(node string, rail int) func(string, *topology.Topology) {
	return func(n string, t *topology.Topology) {
		if n != node {
			return
		}
		pci := nicOfRail(t, rail)
		for i := range t.NICs {
			if t.NICs[i].PCI == pci {
				t.NICs[i].Refused = "firmware 28.38.1900 below the minimum 28.39.1002 for 15b3:1021"
			}
		}
	}
}
