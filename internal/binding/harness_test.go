package binding

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/railyard-io/railyard/api/config/v1alpha1"
	"github.com/railyard-io/railyard/internal/podresources/podlist"
	"github.com/railyard-io/railyard/internal/pool"
	"github.com/railyard-io/railyard/internal/topology"
	"github.com/railyard-io/railyard/machines"
)

const testResource = "railyard.io/rdma_vf"

// topologies caches discovered built-in machines: generating and
// discovering a tree takes a while, and a Topology is immutable.
type topoCache struct {
	mu sync.Mutex
	m  map[string]*topology.Topology
}

var topos = topoCache{m: map[string]*topology.Topology{}}

func machineTopology(t testing.TB, name string, vfs int) *topology.Topology {
	t.Helper()
	topos.mu.Lock()
	defer topos.mu.Unlock()
	key := name + "/" + string(rune('0'+vfs))
	if tp, ok := topos.m[key]; ok {
		return tp
	}
	tp, err := machines.Topology(context.Background(), name, vfs)
	if err != nil {
		t.Fatal(err)
	}
	topos.m[key] = tp
	return tp
}

// testView is a view of a built-in machine with one gpu-aware VF pool (PF
// pool with vfs == 0) of its RDMA-capable devices, and its store.
func testView(t testing.TB, name string, vfs int) (*View, *topology.Topology) {
	t.Helper()
	tp := machineTopology(t, name, vfs)
	kind := v1alpha1.KindVF
	if vfs == 0 {
		kind = v1alpha1.KindPF
	}
	yes := true
	sel, err := pool.Compile(v1alpha1.Pool{Name: testResource, DeviceKind: kind, Selectors: v1alpha1.Selectors{RDMACapable: &yes}})
	if err != nil {
		t.Fatal(err)
	}
	v := ViewFromTopology(tp)
	p := Pool{Resource: testResource, Tag: PoolTag(testResource), Policy: "gpu-aware", RDMACM: true}
	for _, d := range sel.Select(tp) {
		p.Devices = append(p.Devices, Device{ID: d.ID, PF: d.PF, NUMA: d.NUMA, Rail: d.Rail, RDMA: d.RDMA, Uverbs: d.Uverbs, Healthy: d.Healthy, Reason: d.Reason})
	}
	if len(p.Devices) == 0 {
		t.Fatalf("%s: no devices", name)
	}
	v.Pools = []Pool{p}
	v.GPUResourceNames = []string{"nvidia.com/gpu"}
	v.DevRoot = "/dev"
	v.NCCLIBHCA = true
	return &v, tp
}

// newTestStore publishes v into a new store with CDI and device-info
// directories under a temporary directory.
func newTestStore(t testing.TB, v *View, opt Options) *Store {
	t.Helper()
	root := t.TempDir()
	v.CDISpecDir = filepath.Join(root, "cdi")
	v.DevInfoDir = filepath.Join(root, "devinfo")
	s := NewStore(filepath.Join(root, "store"), opt)
	if err := s.Publish(context.Background(), *v); err != nil {
		t.Fatal(err)
	}
	return s
}

// gpuOnRail returns the GPUs of tp in PCI order with their NUMA node.
func gpusOf(tp *topology.Topology) []topology.GPU { return slices.Clone(tp.GPUs) }

// fakeLister is kubelet's PodResources List with a set answer.
type fakeLister struct {
	mu   sync.Mutex
	resp []podlist.Pod
	err  error
}

func (f *fakeLister) List(context.Context) ([]podlist.Pod, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.resp, f.err
}

func (f *fakeLister) set(pods ...podlist.Pod) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.resp = pods
}

// podRes is a PodResources entry with one container holding gpus and tokens.
func podRes(ns, name string, gpus, tokens []string) podlist.Pod {
	c := podlist.Container{Name: "main"}
	if len(gpus) > 0 {
		c.Devices = append(c.Devices, podlist.Devices{Resource: "nvidia.com/gpu", IDs: gpus})
	}
	if len(tokens) > 0 {
		c.Devices = append(c.Devices, podlist.Devices{Resource: testResource, IDs: tokens})
	}
	return podlist.Pod{Namespace: ns, Name: name, Containers: []podlist.Container{c}}
}

func readFile(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func readIfExists(path string) ([]byte, error) { return os.ReadFile(path) }
