package dra_test

import (
	"context"
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/dynamic-resource-allocation/structured"

	"github.com/railyard-io/railyard/api/config/v1alpha1"
	"github.com/railyard-io/railyard/internal/dra"
	"github.com/railyard-io/railyard/internal/dra/gpustandin"
	"github.com/railyard-io/railyard/machines"
)

// BenchmarkBuild2048VFs measures what the kubelet plugin computes on every
// rediscovery of the 2048-VF node: the pool's devices with all their
// attributes, split into slices (DriverResources).
func BenchmarkBuild2048VFs(b *testing.B) {
	topo := bigNode(b)
	pools := []v1alpha1.Pool{{Name: "railyard.io/rdma_vf"}}
	b.ReportAllocs()
	for b.Loop() {
		p, err := dra.Build("big", topo, pools, dra.Options{})
		if err != nil {
			b.Fatal(err)
		}
		if dr := dra.DriverResources(p); len(dr.Pools["big/rdma-vf"].Slices) != 16 {
			b.Fatal("not 16 slices")
		}
	}
}

// benchCluster is n DGX H100 nodes, each publishing 8 VFs on each of its
// 12 ConnectX PFs (96 devices, one slice) and its 8 GPUs (stand-in).
func benchCluster(b *testing.B, n int) []*resourceapi.ResourceSlice {
	b.Helper()
	topo, err := machines.Topology(context.Background(), "dgx-h100", 8)
	if err != nil {
		b.Fatal(err)
	}
	var slices []*resourceapi.ResourceSlice
	for i := range n {
		node := fmt.Sprintf("node-%03d", i)
		pools, err := dra.Build(node, topo, []v1alpha1.Pool{{Name: "railyard.io/rdma_vf"}}, dra.Options{})
		if err != nil {
			b.Fatal(err)
		}
		slices = append(slices, dra.ResourceSlices(node, pools, 1)...)
		slices = append(slices, gpustandin.ResourceSlices(node, topo)...)
	}
	return slices
}

// BenchmarkAllocate8GPU8NIC100Nodes measures the scheduler's allocator for
// one pod's claim of 8 GPUs each with a NIC on a 100-node DGX H100
// cluster: building the allocator over every slice (PreFilter) and
// allocating on one node (one Filter call), or on every node in turn (a
// whole Filter pass, which kube-scheduler spreads over 16 goroutines).
func BenchmarkAllocate8GPU8NIC100Nodes(b *testing.B) {
	slices := benchCluster(b, 100)
	ctx := context.Background()
	for _, cl := range []*resourceapi.ResourceClaim{strictPairs(8), alignedPairs(8)} {
		for _, nodes := range []int{1, 100} {
			b.Run(fmt.Sprintf("%s/nodes=%d", cl.Name, nodes), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					a, err := structured.NewAllocator(ctx, schedulerFeatures, structured.AllocatedState{AllocatedDevices: sets.New[structured.DeviceID]()},
						deviceClasses(), slices, cel.NewCache(10, cel.Features{}))
					if err != nil {
						b.Fatal(err)
					}
					for i := range nodes {
						node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("node-%03d", i)}}
						res, err := a.Allocate(ctx, node, []*resourceapi.ResourceClaim{cl})
						if err != nil || len(res) != 1 {
							b.Fatalf("%s on %s: %v, %d results", cl.Name, node.Name, err, len(res))
						}
					}
				}
			})
		}
	}
}

// BenchmarkAllocate8GPU8NICNoFit measures one Filter call on a node that
// cannot hold an 8-pair claim: one of its 8 GPUs is taken (gpu-short, the
// VF pool), or one of its 8 rail NICs (nic-short, a PF pool: the aligned
// claim then falls back and fits). The allocator tries every assignment
// before it gives up; the benchmark stops it at kube-scheduler's 10 s
// Filter timeout and reports whether it got there. Run with -benchtime=1x.
func BenchmarkAllocate8GPU8NICNoFit(b *testing.B) {
	ctx := context.Background()
	gpuShort := benchCluster(b, 1)
	nicShort := newCluster(b, "dgx-h100", v1alpha1.KindPF, 0)
	for _, tc := range []struct {
		name   string
		slices []*resourceapi.ResourceSlice
		node   string
		inUse  structured.DeviceID
		claims []*resourceapi.ResourceClaim
		fits   bool
	}{
		{"gpu-short", gpuShort, "node-000", structured.MakeDeviceID(gpustandin.DriverName, "node-000", "gpu-0"),
			[]*resourceapi.ResourceClaim{strictPairs(8), alignedPairs(8), gpusFirstStrict(8)}, false},
		{"nic-short", nicShort.slices, nodeName, structured.MakeDeviceID(dra.DriverName, nodeName+"/rdma", "pci-0000-18-00-0"),
			[]*resourceapi.ResourceClaim{strictPairs(8), gpusFirstStrict(8)}, false},
		{"nic-short", nicShort.slices, nodeName, structured.MakeDeviceID(dra.DriverName, nodeName+"/rdma", "pci-0000-18-00-0"),
			[]*resourceapi.ResourceClaim{alignedPairs(8)}, true},
	} {
		for _, cl := range tc.claims {
			b.Run(tc.name+"/"+cl.Name, func(b *testing.B) {
				timedOut := 0.0
				for b.Loop() {
					res, to := allocate(ctx, b, tc.slices, sets.New(tc.inUse), tc.node, cl, filterTimeout)
					if (res != nil) != tc.fits {
						b.Fatalf("allocated %v, want %v", res != nil, tc.fits)
					}
					if to {
						timedOut = 1
					}
				}
				b.ReportMetric(timedOut, "timedout")
			})
		}
	}
}
