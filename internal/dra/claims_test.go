package dra_test

import (
	"context"
	"errors"
	"fmt"
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

	"github.com/railyard-io/railyard/internal/dra"
	"github.com/railyard-io/railyard/internal/dra/gpustandin"
)

// The scheduler's allocator as kube-scheduler 1.35 builds it with its
// default feature gates: DRAAdminAccess and DRAPrioritizedList (beta, on)
// select the "incubating" implementation.
var schedulerFeatures = structured.Features{AdminAccess: true, PrioritizedList: true}

var _ structured.DeviceClassLister = gpustandin.Classes(nil)

func deviceClasses() gpustandin.Classes {
	c := gpustandin.NewClasses()
	for _, pool := range poolsWithClasses {
		dc := dra.PoolDeviceClass(pool)
		c[dc.Name] = dc
	}
	return c
}

// poolsWithClasses are the pools whose DeviceClass (dra.PoolDeviceClass)
// the tests' allocator knows, as the chart renders one per DRA pool.
var poolsWithClasses = []string{"railyard.io/rdma_vf", "railyard.io/rdma_pf", "railyard.io/rdma_shared"}

// filterTimeout is kube-scheduler's default DRA Filter timeout
// (DynamicResourcesFilterTimeoutDefault, feature DRASchedulerFilterTimeout
// beta and on in 1.35): an allocation that takes longer leaves the node
// unschedulable for the pod.
const filterTimeout = 10 * time.Second

// allocate runs the real allocator for one claim on one node, as the
// scheduler's Filter does, within timeout. nil result: unsatisfiable on
// that node, or timed out (timedOut).
func allocate(ctx context.Context, tb testing.TB, slices []*resourceapi.ResourceSlice, inUse sets.Set[structured.DeviceID], node string, claim *resourceapi.ResourceClaim, timeout time.Duration) (res *resourceapi.AllocationResult, timedOut bool) {
	tb.Helper()
	a, err := structured.NewAllocator(ctx, schedulerFeatures, structured.AllocatedState{AllocatedDevices: inUse},
		deviceClasses(), slices, cel.NewCache(10, cel.Features{}))
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	results, err := a.Allocate(ctx, &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}, []*resourceapi.ResourceClaim{claim})
	if errors.Is(err, context.DeadlineExceeded) {
		return nil, true
	}
	if err != nil {
		tb.Fatalf("allocate %s: %v", claim.Name, err)
	}
	if len(results) == 0 {
		return nil, false
	}
	return &results[0], false
}

func claim(name string, requests []resourceapi.DeviceRequest, constraints []resourceapi.DeviceConstraint) *resourceapi.ResourceClaim {
	return &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)},
		Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{
			Requests: requests, Constraints: constraints,
		}},
	}
}

func exactly(name, class string, cel ...string) resourceapi.DeviceRequest {
	return resourceapi.DeviceRequest{Name: name, Exactly: &resourceapi.ExactDeviceRequest{
		DeviceClassName: class, AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 1, Selectors: selectors(cel),
	}}
}

func selectors(exprs []string) []resourceapi.DeviceSelector {
	var out []resourceapi.DeviceSelector
	for _, e := range exprs {
		out = append(out, resourceapi.DeviceSelector{CEL: &resourceapi.CELDeviceSelector{Expression: e}})
	}
	return out
}

func match(attr resourceapi.QualifiedName, requests ...string) resourceapi.DeviceConstraint {
	a := resourceapi.FullyQualifiedName(attr)
	return resourceapi.DeviceConstraint{Requests: requests, MatchAttribute: &a}
}

// Subrequest names of the fallback claims, best first.
const (
	levelRoot = "root" // same resource.kubernetes.io/pcieRoot as its GPU
	levelNUMA = "numa" // same resource.kubernetes.io/numaNode as its GPU
	levelAny  = "any"  // any NIC
	// levelOther is the NIC side of alignedPairs outside the NUMA match.
	levelOther = "other"
)

var levels = []string{levelRoot, levelNUMA, levelAny}

// strictPairs is a claim for n GPUs, each with a NIC on its PCIe root:
// requests gpu0, nic0, gpu1, nic1, ... and one matchAttribute constraint
// on pcieRoot per pair.
func strictPairs(n int) *resourceapi.ResourceClaim {
	var reqs []resourceapi.DeviceRequest
	var cons []resourceapi.DeviceConstraint
	for i := range n {
		g, nic := "gpu"+strconv.Itoa(i), "nic"+strconv.Itoa(i)
		reqs = append(reqs, exactly(g, gpustandin.DeviceClassName), exactly(nic, dra.DeviceClassName))
		cons = append(cons, match(dra.AttrPCIeRoot, g, nic))
	}
	return claim(fmt.Sprintf("strict-%d", n), reqs, cons)
}

// gpusFirstStrict is strictPairs with the GPU requests first, then the
// NIC requests: the same answers, but the allocator tries GPUs for every
// GPU request before any NIC, so a node short of free GPUs fails in
// 0.5 s instead of the scheduler's 10 s timeout, and a node short of NICs
// takes longer (BENCHMARKS.md).
func gpusFirstStrict(n int) *resourceapi.ResourceClaim {
	var reqs []resourceapi.DeviceRequest
	var cons []resourceapi.DeviceConstraint
	for i := range n {
		reqs = append(reqs, exactly("gpu"+strconv.Itoa(i), gpustandin.DeviceClassName))
	}
	for i := range n {
		g, nic := "gpu"+strconv.Itoa(i), "nic"+strconv.Itoa(i)
		reqs = append(reqs, exactly(nic, dra.DeviceClassName))
		cons = append(cons, match(dra.AttrPCIeRoot, g, nic))
	}
	return claim(fmt.Sprintf("gpus-first-%d", n), reqs, cons)
}

// nicFallbackPairs is the obvious way to fall back: strictPairs where each
// NIC request falls back (firstAvailable) to a NIC on its GPU's NUMA node,
// then to any NIC. The tests show why Railyard does not recommend it: the
// allocator settles for a NIC fallback before it tries another GPU, and a
// GPU without resource.kubernetes.io/numaNode fails the NUMA constraint
// whatever its NIC picked.
func nicFallbackPairs(n int) *resourceapi.ResourceClaim {
	var reqs []resourceapi.DeviceRequest
	var cons []resourceapi.DeviceConstraint
	for i := range n {
		g, nic := "gpu"+strconv.Itoa(i), "nic"+strconv.Itoa(i)
		reqs = append(reqs, exactly(g, gpustandin.DeviceClassName), firstAvailable(nic, dra.DeviceClassName, levelRoot, levelNUMA, levelAny))
		cons = append(cons, match(dra.AttrPCIeRoot, g, nic+"/"+levelRoot), match(dra.AttrNUMANode, g, nic+"/"+levelNUMA))
	}
	return claim(fmt.Sprintf("nic-fallback-%d", n), reqs, cons)
}

// alignedPairs is the claim Railyard recommends (docs/dra.md) for n GPUs
// each with a NIC as close as the node allows: the GPU request picks the
// level (firstAvailable root, numa, any), so the allocator tries every GPU
// and NIC at one level before the next; the NIC request only says whether
// it takes part in the NUMA match (numa) or not (other):
//
//   - [gpuI/root, nicI] match pcieRoot: a GPU at level root gets a NIC on
//     its root;
//   - [gpuI/numa, nicI/numa] match numaNode: at level numa, on its node;
//   - [gpuI/numa, nicI/other] match pciBusID, which two devices never
//     share: a GPU at level numa cannot take a NIC outside the match.
//
// A device missing an attribute fails only the levels that need it (a node
// without NUMA information falls from root to any). Three constraints per
// pair: 8 pairs use 24 of the API's 32.
func alignedPairs(n int) *resourceapi.ResourceClaim {
	var reqs []resourceapi.DeviceRequest
	var cons []resourceapi.DeviceConstraint
	for i := range n {
		g, nic := "gpu"+strconv.Itoa(i), "nic"+strconv.Itoa(i)
		reqs = append(reqs, firstAvailable(g, gpustandin.DeviceClassName, levelRoot, levelNUMA, levelAny),
			firstAvailable(nic, dra.DeviceClassName, levelNUMA, levelOther))
		cons = append(cons,
			match(dra.AttrPCIeRoot, g+"/"+levelRoot, nic),
			match(dra.AttrNUMANode, g+"/"+levelNUMA, nic+"/"+levelNUMA),
			match(dra.AttrPCIBusID, g+"/"+levelNUMA, nic+"/"+levelOther))
	}
	return claim(fmt.Sprintf("aligned-%d", n), reqs, cons)
}

func firstAvailable(name, class string, subs ...string) resourceapi.DeviceRequest {
	r := resourceapi.DeviceRequest{Name: name}
	for _, s := range subs {
		r.FirstAvailable = append(r.FirstAvailable, resourceapi.DeviceSubRequest{Name: s, DeviceClassName: class,
			AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 1})
	}
	return r
}
