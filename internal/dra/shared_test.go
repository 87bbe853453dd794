package dra_test

import (
	"context"
	"strconv"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/dynamic-resource-allocation/structured"

	"github.com/railyard-io/railyard/api/config/v1alpha1"
	"github.com/railyard-io/railyard/internal/dra"
	"github.com/railyard-io/railyard/machines"
)

// The allocator as kube-scheduler 1.37 builds it: DRAConsumableCapacity is
// beta and on there, with admin access and prioritized lists.
var schedulerFeatures137 = structured.Features{AdminAccess: true, PrioritizedList: true, ConsumableCapacity: true}

// sharedState is what the scheduler knows of the claims allocated so far
// (AllocatedState, as kube-scheduler gathers it from allocated claims):
// whole devices, shares of shared devices, and the capacity they consume.
type sharedState struct{ structured.AllocatedState }

func newSharedState() *sharedState {
	return &sharedState{structured.AllocatedState{
		AllocatedDevices:         sets.New[structured.DeviceID](),
		AllocatedSharedDeviceIDs: sets.New[structured.SharedDeviceID](),
		AggregatedCapacity:       structured.NewConsumedCapacityCollection(),
	}}
}

func (s *sharedState) add(res *resourceapi.AllocationResult) {
	for _, r := range res.Devices.Results {
		id := structured.MakeDeviceID(r.Driver, r.Pool, r.Device)
		if r.ShareID == nil {
			s.AllocatedDevices.Insert(id)
			continue
		}
		s.AllocatedSharedDeviceIDs.Insert(structured.MakeSharedDeviceID(id, r.ShareID))
		s.AggregatedCapacity.Insert(structured.NewDeviceConsumedCapacity(id, r.ConsumedCapacity))
	}
}

// allocateShared runs the 1.37 allocator for one claim on nodeName with
// what s holds; nil when the claim does not fit.
func allocateShared(t *testing.T, slices []*resourceapi.ResourceSlice, s *sharedState, c *resourceapi.ResourceClaim) *resourceapi.AllocationResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), filterTimeout)
	defer cancel()
	a, err := structured.NewAllocator(ctx, schedulerFeatures137, s.AllocatedState, deviceClasses(), slices, cel.NewCache(10, cel.Features{}))
	if err != nil {
		t.Fatal(err)
	}
	results, err := a.Allocate(ctx, &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeName}}, []*resourceapi.ResourceClaim{c})
	if err != nil {
		t.Fatalf("allocate %s: %v", c.Name, err)
	}
	if len(results) == 0 {
		return nil
	}
	return &results[0]
}

func sharedPool(limit int, selectors v1alpha1.Selectors) v1alpha1.Pool {
	return v1alpha1.Pool{Name: "railyard.io/rdma_shared", DeviceKind: v1alpha1.KindShared, SharedLimit: &limit, Selectors: selectors}
}

// ibNICs counts the generated DGX H100's InfiniBand NICs: the 8 compute
// NICs and the 2 storage NICs.
func ibNICs(t *testing.T) int {
	t.Helper()
	topo, err := machines.Topology(context.Background(), "dgx-h100", 0)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, nic := range topo.NICs {
		if nic.LinkLayer == "InfiniBand" {
			n++
		}
	}
	return n
}

func sharedSlices(t *testing.T, p v1alpha1.Pool) ([]dra.Pool, []*resourceapi.ResourceSlice) {
	t.Helper()
	topo, err := machines.Topology(context.Background(), "dgx-h100", 0)
	if err != nil {
		t.Fatal(err)
	}
	pools, err := dra.Build(nodeName, topo, []v1alpha1.Pool{p}, dra.Options{ConsumableCapacity: true})
	if err != nil {
		t.Fatal(err)
	}
	return pools, dra.ResourceSlices(nodeName, pools, 1)
}

// shares is a claim of n NICs of the shared pool, each taking want shares
// (0: the device's default, one).
func shares(name string, n int64, want int64, constraints ...resourceapi.DeviceConstraint) *resourceapi.ResourceClaim {
	r := exactly("nic", dra.PoolDeviceClass("railyard.io/rdma_shared").Name)
	r.Exactly.Count = n
	if want > 0 {
		r.Exactly.Capacity = &resourceapi.CapacityRequirements{Requests: map[resourceapi.QualifiedName]resource.Quantity{
			dra.CapacityShares: *resource.NewQuantity(want, resource.DecimalSI)}}
	}
	c := claim(name, []resourceapi.DeviceRequest{r}, constraints)
	c.UID = types.UID("uid-" + name)
	return c
}

// A shared pool is one device per NIC, allocatable many times
// (allowMultipleAllocations) while its sharedLimit shares last: one share
// per claim by default, 1 to sharedLimit on request.
func TestSharedPoolPublishesEachNICOnceWithItsShares(t *testing.T) {
	pools, slices := sharedSlices(t, sharedPool(4, v1alpha1.Selectors{LinkLayers: []string{"InfiniBand"}}))
	p, n := pools[0], ibNICs(t)
	if p.Kind != v1alpha1.KindShared || p.Shares != 4 || len(p.Devices) != n || len(p.Unpublished) != 0 {
		t.Fatalf("pool: kind %s, %d shares, %d devices, unpublished %v; want shared, 4, the %d InfiniBand NICs", p.Kind, p.Shares, len(p.Devices), p.Unpublished, n)
	}
	for _, d := range p.Devices {
		if d.AllowMultipleAllocations == nil || !*d.AllowMultipleAllocations {
			t.Errorf("%s: allowMultipleAllocations %v", d.Name, d.AllowMultipleAllocations)
		}
		c, ok := d.Capacity[dra.CapacityShares]
		if !ok || c.Value.Value() != 4 || c.RequestPolicy == nil || c.RequestPolicy.Default.Value() != 1 ||
			c.RequestPolicy.ValidRange == nil || c.RequestPolicy.ValidRange.Min.Value() != 1 || c.RequestPolicy.ValidRange.Max.Value() != 4 {
			t.Errorf("%s: capacity %+v", d.Name, d.Capacity)
		}
		if pci := attrString(d, dra.AttrPCIBusID); attrString(d, dra.AttrPFPCIAddress) != pci || attrString(d, dra.AttrIsVF) != "false" {
			t.Errorf("%s: pciBusID %s, pfPCIAddress %s, isVF %s: want the NIC itself", d.Name, pci, attrString(d, dra.AttrPFPCIAddress), attrString(d, dra.AttrIsVF))
		}
	}
	if errs := checkSlices(slices); len(errs) > 0 {
		t.Errorf("slices break the API's limits: %v", errs)
	}
}

// Where the API server drops consumable capacity (1.35), a shared pool's
// NICs are left out, each saying why: published without
// allowMultipleAllocations, one claim would take a NIC whole.
func TestSharedPoolIsLeftOutWithoutConsumableCapacity(t *testing.T) {
	topo, err := machines.Topology(context.Background(), "dgx-h100", 0)
	if err != nil {
		t.Fatal(err)
	}
	pools, err := dra.Build(nodeName, topo, []v1alpha1.Pool{sharedPool(4, v1alpha1.Selectors{LinkLayers: []string{"InfiniBand"}})}, dra.Options{})
	if err != nil {
		t.Fatal(err)
	}
	p, n := pools[0], ibNICs(t)
	if len(p.Devices) != 0 || len(p.Unpublished) != n {
		t.Fatalf("%d devices, %d unpublished; want 0 and the %d InfiniBand NICs", len(p.Devices), len(p.Unpublished), n)
	}
	for _, u := range p.Unpublished {
		if u.Reason != dra.NoConsumableCapacity {
			t.Errorf("%s: %q", u.PCI, u.Reason)
		}
	}
}

// The real 1.37 allocator hands one NIC of sharedLimit 3 to three claims,
// each its own share (a ShareID) consuming one; the fourth does not fit,
// nor does a claim asking two shares once two are taken, and a claim
// asking more than the NIC has fits nowhere.
func TestRealAllocatorSharesANICUpToItsLimit(t *testing.T) {
	topo, err := machines.Topology(context.Background(), "dgx-h100", 0)
	if err != nil {
		t.Fatal(err)
	}
	nic := topo.NICs[0].PCI
	_, slices := sharedSlices(t, sharedPool(3, v1alpha1.Selectors{PCIAddresses: []string{nic}}))
	st := newSharedState()
	seen := map[types.UID]bool{}
	for i, name := range []string{"a", "b", "c"} {
		res := allocateShared(t, slices, st, shares(name, 1, 0))
		if res == nil {
			t.Fatalf("claim %d of 3 does not fit on a NIC of 3 shares", i+1)
		}
		r := res.Devices.Results[0]
		if r.Device != mustName(t, nic) || r.ShareID == nil || seen[*r.ShareID] {
			t.Fatalf("claim %s: device %s, share %v (seen %v)", name, r.Device, r.ShareID, seen)
		}
		seen[*r.ShareID] = true
		if got := r.ConsumedCapacity[dra.CapacityShares]; got.Value() != 1 {
			t.Errorf("claim %s consumed %s shares, want the default 1", name, got.String())
		}
		st.add(res)
	}
	if res := allocateShared(t, slices, st, shares("d", 1, 0)); res != nil {
		t.Errorf("a fourth claim got %+v from a NIC of 3 shares", res.Devices.Results)
	}

	st = newSharedState()
	for _, name := range []string{"a", "b"} {
		res := allocateShared(t, slices, st, shares(name, 1, 0))
		if res == nil {
			t.Fatalf("claim %s does not fit", name)
		}
		st.add(res)
	}
	if res := allocateShared(t, slices, st, shares("two", 1, 2)); res != nil {
		t.Errorf("a claim of 2 shares fit where 1 of 3 is left: %+v", res.Devices.Results)
	}
	// One request of two NICs never takes two shares of one NIC.
	if res := allocateShared(t, slices, newSharedState(), shares("pair", 2, 0)); res != nil {
		t.Errorf("one request of 2 NICs fit on one NIC: %+v", res.Devices.Results)
	}
	if res := allocateShared(t, slices, newSharedState(), shares("four", 1, 4)); res != nil {
		t.Errorf("a claim of 4 shares fit a NIC of 3: %+v", res.Devices.Results)
	}
	res := allocateShared(t, slices, newSharedState(), shares("three", 1, 3))
	if res == nil {
		t.Fatal("a claim of all 3 shares does not fit an idle NIC")
	}
	if got := res.Devices.Results[0].ConsumedCapacity[dra.CapacityShares]; got.Value() != 3 {
		t.Errorf("consumed %s, want 3", got.String())
	}
}

// perRail is a claim of one shared NIC per request, as a multi-rail
// claim is written (a request per GPU and its NIC: docs/dra.md), with
// the constraints given.
func perRail(name string, n int, constraints ...resourceapi.DeviceConstraint) *resourceapi.ResourceClaim {
	c := shares(name, 1, 0, constraints...)
	r := c.Spec.Devices.Requests[0]
	c.Spec.Devices.Requests = nil
	for i := range n {
		r.Name = "nic-" + strconv.Itoa(i)
		c.Spec.Devices.Requests = append(c.Spec.Devices.Requests, r)
	}
	return c
}

// A claim with a request per rail: the real allocator hands each request
// a share of the first NIC with shares left, so all of them get one NIC
// (a multi-allocatable device is allocatable again within a claim) and the
// pod has one rail, not n. A distinctAttribute constraint on the NIC's PCI
// address over the requests makes them n NICs. (One request of count n
// always gets n distinct NICs: TestRealAllocatorSharesANICUpToItsLimit.)
func TestRealAllocatorDistinctAttributeKeepsTwoSharesOffOneNIC(t *testing.T) {
	_, slices := sharedSlices(t, sharedPool(8, v1alpha1.Selectors{LinkLayers: []string{"InfiniBand"}}))
	nics := func(res *resourceapi.AllocationResult) []string {
		var out []string
		for _, r := range res.Devices.Results {
			out = append(out, r.Device)
		}
		return out
	}
	plain := allocateShared(t, slices, newSharedState(), perRail("plain", 2))
	if plain == nil {
		t.Fatal("a claim of 2 requests does not fit on the shared NICs")
	}
	if got := nics(plain); got[0] != got[1] {
		t.Errorf("without distinctAttribute the requests got %v: the allocator now spreads them by itself; docs/dra.md says it does not", got)
	}
	pci := resourceapi.FullyQualifiedName(dra.AttrPCIBusID)
	reqs := func(n int) []string {
		var out []string
		for i := range n {
			out = append(out, "nic-"+strconv.Itoa(i))
		}
		return out
	}
	distinct := allocateShared(t, slices, newSharedState(), perRail("distinct", 2,
		resourceapi.DeviceConstraint{Requests: reqs(2), DistinctAttribute: &pci}))
	if distinct == nil {
		t.Fatal("a claim of 2 distinct NICs does not fit")
	}
	if got := nics(distinct); got[0] == got[1] {
		t.Errorf("with distinctAttribute %s: two shares of %s", pci, got[0])
	}
	// Every NIC of a 3-NIC pool, distinct, fits; a fourth cannot. (On
	// all 10 NICs, 11 distinct requests run into the scheduler's 10 s
	// filter timeout: the allocator tries every assignment first.)
	topo, err := machines.Topology(context.Background(), "dgx-h100", 0)
	if err != nil {
		t.Fatal(err)
	}
	_, three := sharedSlices(t, sharedPool(8, v1alpha1.Selectors{PCIAddresses: []string{topo.NICs[0].PCI, topo.NICs[1].PCI, topo.NICs[2].PCI}}))
	if res := allocateShared(t, three, newSharedState(), perRail("all", 3,
		resourceapi.DeviceConstraint{Requests: reqs(3), DistinctAttribute: &pci})); res == nil {
		t.Error("3 distinct NICs of 3 do not fit")
	}
	if res := allocateShared(t, three, newSharedState(), perRail("more", 4,
		resourceapi.DeviceConstraint{Requests: reqs(4), DistinctAttribute: &pci})); res != nil {
		t.Errorf("4 distinct NICs of 3 fit: %v", nics(res))
	}
}

// A NIC in a pf pool and a shared pool is published by the first only.
func TestSharedAndPFPoolDoNotPublishOneNICTwice(t *testing.T) {
	topo, err := machines.Topology(context.Background(), "dgx-h100", 0)
	if err != nil {
		t.Fatal(err)
	}
	pools, err := dra.Build(nodeName, topo, []v1alpha1.Pool{
		{Name: "railyard.io/rdma_pf", DeviceKind: v1alpha1.KindPF, Selectors: v1alpha1.Selectors{LinkLayers: []string{"InfiniBand"}}},
		sharedPool(4, v1alpha1.Selectors{}),
	}, dra.Options{ConsumableCapacity: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range pools[1].Devices {
		if attrString(d, dra.AttrLinkLayer) == "InfiniBand" {
			t.Errorf("%s published by both pools", d.Name)
		}
	}
	n := 0
	for _, u := range pools[1].Unpublished {
		if strings.HasPrefix(u.Reason, "already published in DRA pool") {
			n++
		}
	}
	if want := ibNICs(t); n != want {
		t.Errorf("%d NICs left out as the pf pool's, want %d: %v", n, want, pools[1].Unpublished)
	}
}

// twoSharedNICs is docs/dra.md's claim of a share of each of two NICs of
// a shared pool: a request per NIC, kept on two NICs by distinctAttribute.
func twoSharedNICs() *resourceapi.ResourceClaim {
	pci := resourceapi.FullyQualifiedName(dra.AttrPCIBusID)
	return perRail("two-shared-nics", 2, resourceapi.DeviceConstraint{Requests: []string{"nic-0", "nic-1"}, DistinctAttribute: &pci})
}

// docs/examples/dra/two-shared-nics.yaml, read from its file, allocates
// two NICs' shares on a DGX H100's shared pool, and a second copy of it
// the NICs' second shares (a limit of 2: a third does not fit).
func TestDocSharedExampleAllocates(t *testing.T) {
	_, slices := sharedSlices(t, sharedPool(2, v1alpha1.Selectors{PCIAddresses: []string{"0000:18:00.0", "0000:29:00.0"}}))
	st := newSharedState()
	for i := range 3 {
		cl := loadExample(t, "two-shared-nics.yaml")
		cl.UID = types.UID("uid-example-" + strconv.Itoa(i))
		res := allocateShared(t, slices, st, cl)
		if i == 2 {
			if res != nil {
				t.Errorf("a third copy fit on 2 NICs of 2 shares: %+v", res.Devices.Results)
			}
			break
		}
		if res == nil || len(res.Devices.Results) != 2 || res.Devices.Results[0].Device == res.Devices.Results[1].Device {
			t.Fatalf("copy %d: %+v", i+1, res)
		}
		st.add(res)
	}
}
