package draplugin_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/dynamic-resource-allocation/resourceslice"
	cdispec "tags.cncf.io/container-device-interface/specs-go"

	"github.com/railyard-io/railyard/api/config/v1alpha1"
	"github.com/railyard-io/railyard/internal/containerdev"
	"github.com/railyard-io/railyard/internal/discovery"
	"github.com/railyard-io/railyard/internal/dra"
	"github.com/railyard-io/railyard/internal/draplugin"
	"github.com/railyard-io/railyard/internal/fakesysfs"
	"github.com/railyard-io/railyard/internal/topology"
	"github.com/railyard-io/railyard/machines"
)

const node = "node-a"

// vfPool is the DRA pool of every VF of the node.
var vfPool = v1alpha1.Pool{Name: "railyard.io/rdma_vf", DeviceKind: v1alpha1.KindVF, Delivery: v1alpha1.DeliveryDRA}

// node is a fake node: a generated sysfs tree of a built-in machine (no
// RDMA hardware here: the tree stands in for /sys), a state directory
// and a CDI spec directory.
type fakeNode struct {
	sysfs, state, cdi, dev string
	view                   string // the DRA view's directory
	pools                  []v1alpha1.Pool
	crossNIC               *int              // the driver's NCCL.CrossNIC
	nccl                   containerdev.NCCL // the rest of the driver's NCCL
}

// ncclConfig is the driver's NCCL configuration.
func (n *fakeNode) ncclConfig() containerdev.NCCL {
	c := n.nccl
	c.CrossNIC = n.crossNIC
	return c
}

// newNode generates a built-in machine's tree, or fakesysfs.SmallNode's
// for "small".
func newNode(t testing.TB, machine string, vfs int, pools ...v1alpha1.Pool) *fakeNode {
	t.Helper()
	sys, err := fakesysfs.MkdirTemp()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fakesysfs.Cleanup(sys) })
	if machine == "small" {
		desc, err := fakesysfs.SmallNode()
		if err != nil {
			t.Fatal(err)
		}
		err = fakesysfs.Generate(sys, desc, fakesysfs.Options{VFsPerPF: vfs})
		if err != nil {
			t.Fatal(err)
		}
	} else if err := machines.WriteSysfs(machine, sys, vfs); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if len(pools) == 0 {
		pools = []v1alpha1.Pool{vfPool}
	}
	return &fakeNode{sysfs: sys, state: filepath.Join(dir, "state"), cdi: filepath.Join(dir, "cdi"), dev: "/dev",
		view: filepath.Join(dir, "binding"), pools: pools}
}

func (n *fakeNode) topo(t testing.TB) *topology.Topology {
	t.Helper()
	topo, err := discovery.Discover(context.Background(), n.sysfs)
	if err != nil {
		t.Fatal(err)
	}
	return topo
}

// driver is a driver of the node that has seen its topology once.
func (n *fakeNode) driver(t testing.TB) *draplugin.Driver {
	t.Helper()
	d, err := draplugin.New(draplugin.Config{NodeName: node, Pools: n.pools, DevRoot: n.dev, CDISpecDir: n.cdi, StateDir: n.state, ViewDir: n.view, NCCL: n.ncclConfig()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Update(context.Background(), n.topo(t)); err != nil {
		t.Fatal(err)
	}
	return d
}

func (n *fakeNode) spec(t testing.TB, uid types.UID) *cdispec.Spec {
	t.Helper()
	b, err := os.ReadFile(draplugin.SpecPath(n.cdi, uid))
	if err != nil {
		t.Fatal(err)
	}
	var s cdispec.Spec
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	return &s
}

// result is one allocation result.
type result struct{ driver, pool, pci, request string }

// claim is an allocated claim with the given results; a result's pci
// becomes its device name (dra.DeviceName) unless the driver is not
// Railyard's.
func claim(t testing.TB, uid string, rs ...result) *resourceapi.ResourceClaim {
	t.Helper()
	c := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "claim-" + uid, UID: types.UID(uid)}}
	c.Status.Allocation = &resourceapi.AllocationResult{}
	for _, r := range rs {
		name := r.pci
		if r.driver == dra.DriverName {
			if n, err := dra.DeviceName(r.pci); err == nil {
				name = n
			}
		}
		c.Status.Allocation.Devices.Results = append(c.Status.Allocation.Devices.Results,
			resourceapi.DeviceRequestAllocationResult{Driver: r.driver, Pool: r.pool, Device: name, Request: r.request})
	}
	return c
}

func nic(pci, request string) result {
	return result{driver: dra.DriverName, pool: node + "/rdma-vf", pci: pci, request: request}
}

// recorder is a Publisher that keeps what it was given.
type recorder struct {
	mu  sync.Mutex
	got []resourceslice.DriverResources
}

func (r *recorder) PublishResources(_ context.Context, res resourceslice.DriverResources) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, res)
	return nil
}

// record makes d publish into a new recorder, as the kubelet plugin
// helper would receive the slices.
func record(t testing.TB, d *draplugin.Driver) *recorder {
	t.Helper()
	rec := &recorder{}
	if err := d.SetPublisher(context.Background(), rec); err != nil {
		t.Fatal(err)
	}
	return rec
}

func (r *recorder) last() (resourceslice.DriverResources, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.got) == 0 {
		return resourceslice.DriverResources{}, 0
	}
	return r.got[len(r.got)-1], len(r.got)
}

// published lists the device names of a DRA pool in what was published.
func published(res resourceslice.DriverResources, pool string) map[string]bool {
	out := map[string]bool{}
	for _, s := range res.Pools[pool].Slices {
		for _, d := range s.Devices {
			out[d.Name] = true
		}
	}
	return out
}
