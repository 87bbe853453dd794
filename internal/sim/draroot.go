package sim

import (
	"fmt"
	"slices"
	"sync"

	"github.com/railyard-io/railyard/internal/alloc"
	"github.com/railyard-io/railyard/internal/topology"
)

// pcieRootFirstFit models what Kubernetes' DRA scheduler achieves for a
// claim that pairs each GPU with a NIC under a matchAttribute constraint on
// the standard attribute resource.kubernetes.io/pcieRoot (the PCI root
// complex, "pci0000:15"), with a firstAvailable fallback to an
// unconstrained NIC: the structured allocator takes devices first fit, in
// the order they are published (by address), so NIC k is the first free
// device on the PCIe root of the pod's GPU k (GPUs in the order given,
// cycling when the claim asks fewer NICs than GPUs), else the first free
// device anywhere. It knows the root and nothing finer: on a root with
// several switches the first device may sit under another switch (PHB).
type pcieRootFirstFit struct {
	mu    sync.Mutex
	topo  *topology.Topology
	ix    *alloc.Index
	roots []string // PF -> its host bridge
}

var _ alloc.Policy = (*pcieRootFirstFit)(nil)

func newPCIeRootFirstFit() *pcieRootFirstFit { return &pcieRootFirstFit{} }

func (*pcieRootFirstFit) Name() string       { return "dra-pcieroot" }
func (*pcieRootFirstFit) Needs() alloc.Needs { return alloc.Needs{PodGPUs: true} }

// index returns the index and PF roots of t, computed once per topology.
func (p *pcieRootFirstFit) index(t *topology.Topology) (*alloc.Index, []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.topo != t {
		p.topo, p.ix, p.roots = t, alloc.NewIndex(t), make([]string, len(t.NICs))
		for i, n := range t.NICs {
			if d, ok := t.Device(n.PCI); ok {
				p.roots[i] = d.HostBridge
			}
		}
	}
	return p.ix, p.roots
}

// Allocate answers within kubelet's contract like every policy: exactly
// Size distinct offered devices, every must-include one among them.
func (p *pcieRootFirstFit) Allocate(req alloc.Request) (alloc.Result, error) {
	if req.Topology == nil {
		return alloc.Result{}, fmt.Errorf("%w: no topology", alloc.ErrInvalidRequest)
	}
	avail := req.Available // kept when sorted without repeats (the simulator's offers)
	for i := 1; i < len(avail); i++ {
		if avail[i-1] >= avail[i] {
			avail = slices.Compact(slices.Sorted(slices.Values(req.Available)))
			break
		}
	}
	if req.Size < 0 || req.Size > len(avail) || len(req.MustInclude) > req.Size {
		return alloc.Result{}, fmt.Errorf("%w: size %d, %d distinct devices offered, %d must-include", alloc.ErrInvalidRequest, req.Size, len(avail), len(req.MustInclude))
	}
	ix, pfRoots := p.index(req.Topology)
	used := make([]bool, len(avail))
	out := make([]string, 0, req.Size)
	for _, a := range req.MustInclude {
		i, ok := slices.BinarySearch(avail, a)
		if !ok {
			return alloc.Result{}, fmt.Errorf("%w: must-include device %q is not offered", alloc.ErrInvalidRequest, a)
		}
		if !used[i] {
			used[i] = true
			out = append(out, a)
		}
	}
	root := make([]string, len(avail))
	for i, a := range avail {
		if j, ok := ix.Lookup(a); ok {
			_, pf := ix.DeviceAt(j)
			root[i] = pfRoots[pf]
		}
	}
	var gpuRoots []string
	for _, g := range req.GPUs {
		if d, ok := req.Topology.Device(g); ok && d.HostBridge != "" {
			gpuRoots = append(gpuRoots, d.HostBridge)
		}
	}
	onRoot, elsewhere := 0, 0
	for k := 0; len(out) < req.Size; k++ {
		pick := -1
		if len(gpuRoots) > 0 {
			want := gpuRoots[k%len(gpuRoots)]
			for i := range avail {
				if !used[i] && root[i] == want {
					pick = i
					onRoot++
					break
				}
			}
		}
		if pick < 0 {
			pick = slices.Index(used, false)
			elsewhere++
		}
		used[pick] = true
		out = append(out, avail[pick])
	}
	return alloc.Result{Devices: out, Policy: p.Name(), Reasons: []string{
		fmt.Sprintf("%d device(s) first fit on a GPU's PCIe root, %d first fit anywhere", onRoot, elsewhere),
	}}, nil
}
