package alloc

import (
	"slices"
	"sync"

	"github.com/railyard-io/railyard/internal/pciaddr"
	"github.com/railyard-io/railyard/internal/topology"
)

// unhealthyRank is the effective rank of a device whose ports are not
// active: worse than any class, even an unknown one, so a healthy device is
// always preferred.
const unhealthyRank = 7

// unknownRank is the rank of a device that is not part of the topology:
// topology.ClassUnknown.Rank().
const unknownRank = 6

// Index is the per-topology data every policy decision needs, computed once:
// every allocatable device (each PF and each VF) in address order, its PF
// (rail) and health, and the class rank of every GPU x PF pair. An Index is
// immutable and safe for concurrent use.
type Index struct {
	topo   *topology.Topology
	devs   []device         // every PF and VF, sorted by address
	byAddr map[string]int32 // address -> index in devs
	// byRID maps a PCI domain to a table indexed by routing ID
	// (bus<<8|device<<3|function) holding 1 + the index in devs (0: none):
	// the fast path of lookup.
	byRID  map[uint32]*[1 << 16]int32
	dom0   uint32          // the domain of the first device
	tab0   *[1 << 16]int32 // byRID[dom0]
	pfs    []pf            // the topology's NICs, in its order
	gpuIdx map[string]int  // GPU address -> index in topo.GPUs
	// rank[g*len(pfs)+p] is the class rank of GPU g to PF p.
	rank []int8
	// class[g*len(pfs)+p] is the class of GPU g to PF p.
	class   []topology.Class
	gpuNUMA []int
}

type device struct {
	addr    string
	pf      int32
	healthy bool
}

type pf struct {
	addr string
	numa int
	devs []int32 // the PF's devices (itself and its VFs) in address order
}

// NewIndex precomputes the data policies need for t. Keep it for as long as
// t is in use; a policy created by this package also caches indexes itself.
func NewIndex(t *topology.Topology) *Index {
	ix := &Index{
		topo:   t,
		byAddr: map[string]int32{},
		pfs:    make([]pf, len(t.NICs)),
		gpuIdx: make(map[string]int, len(t.GPUs)),
	}
	for i, n := range t.NICs {
		ix.pfs[i] = pf{addr: n.PCI, numa: n.NUMA}
		ix.devs = append(ix.devs, device{addr: n.PCI, pf: int32(i), healthy: n.Healthy()})
		for _, vf := range n.VFs {
			ok, _ := n.VFHealth(vf)
			ix.devs = append(ix.devs, device{addr: vf.PCI, pf: int32(i), healthy: ok})
		}
	}
	pciaddr.SortByAddress(ix.devs, func(d device) string { return d.addr })
	ix.devs = slices.CompactFunc(ix.devs, func(a, b device) bool { return a.addr == b.addr })
	ix.byRID = map[uint32]*[1 << 16]int32{}
	for i, d := range ix.devs {
		ix.byAddr[d.addr] = int32(i)
		if a, ok := pciaddr.ParseCanonical(d.addr); ok {
			tab := ix.byRID[a.Domain]
			if tab == nil {
				tab = new([1 << 16]int32)
				ix.byRID[a.Domain] = tab
			}
			tab[a.RID()] = int32(i) + 1
		}
		ix.pfs[d.pf].devs = append(ix.pfs[d.pf].devs, int32(i))
	}
	if len(ix.devs) > 0 {
		if a, ok := pciaddr.ParseCanonical(ix.devs[0].addr); ok {
			ix.dom0, ix.tab0 = a.Domain, ix.byRID[a.Domain]
		}
	}
	np := len(ix.pfs)
	ix.rank = make([]int8, len(t.GPUs)*np)
	ix.class = make([]topology.Class, len(t.GPUs)*np)
	ix.gpuNUMA = make([]int, len(t.GPUs))
	for g, gpu := range t.GPUs {
		ix.gpuIdx[gpu.PCI] = g
		ix.gpuNUMA[g] = gpu.NUMA
		for p, n := range t.NICs {
			c := t.Class(gpu.PCI, n.PCI)
			ix.class[g*np+p] = c
			ix.rank[g*np+p] = int8(c.Rank())
		}
	}
	return ix
}

// lookup returns the index in devs of the device at addr.
func (ix *Index) lookup(addr string) (int32, bool) {
	if a, ok := pciaddr.ParseCanonical(addr); ok {
		tab := ix.tab0
		if a.Domain != ix.dom0 {
			tab = ix.byRID[a.Domain]
		}
		if tab != nil {
			if i := tab[a.RID()] - 1; i >= 0 && ix.devs[i].addr == addr {
				return i, true
			}
		}
	}
	i, ok := ix.byAddr[addr]
	return i, ok
}

// Topology returns the model the index was built from.
func (ix *Index) Topology() *topology.Topology { return ix.topo }

// Devices returns every allocatable device address (each PF and each VF) in
// address order.
func (ix *Index) Devices() []string {
	out := make([]string, len(ix.devs))
	for i, d := range ix.devs {
		out[i] = d.addr
	}
	return out
}

// Healthy reports whether the device at addr is in the model and its ports
// (the VF's own ports when it has some, else its PF's) are all active.
func (ix *Index) Healthy(addr string) bool {
	i, ok := ix.lookup(addr)
	return ok && ix.devs[i].healthy
}

// EffectiveRank is the cost of serving gpu with the device at addr: the
// class rank of the GPU and the device's PF (1 for PIX to 5 for SYS), 6 when
// either is not in the model, 7 when the device is unhealthy.
func (ix *Index) EffectiveRank(gpu, addr string) int {
	g, okG := ix.gpuIdx[gpu]
	d, okD := ix.lookup(addr)
	if !okG || !okD {
		return unknownRank
	}
	return ix.effRank(g, d)
}

func (ix *Index) effRank(g int, d int32) int {
	dv := ix.devs[d]
	if !dv.healthy {
		return unhealthyRank
	}
	return int(ix.rank[g*len(ix.pfs)+int(dv.pf)])
}

// Nearest returns, for gpu, the closest device among devices (by
// EffectiveRank, ties to the first) and its distance class. The class is
// ClassUnknown when devices is empty or nothing is known about the pair.
func (ix *Index) Nearest(gpu string, devices []string) (string, topology.Class) {
	best, bestRank := "", unhealthyRank+1
	for _, d := range devices {
		if r := ix.EffectiveRank(gpu, d); r < bestRank {
			best, bestRank = d, r
		}
	}
	if best == "" {
		return "", topology.ClassUnknown
	}
	return best, ix.topo.Class(gpu, best)
}

// Score is the quality measure every policy is compared by: the sum over
// gpus of the effective rank of the GPU's nearest device among devices.
// Lower is better; the optimal policy minimises it.
func (ix *Index) Score(gpus, devices []string) int {
	total := 0
	for _, g := range gpus {
		best := unhealthyRank + 1
		for _, d := range devices {
			if r := ix.EffectiveRank(g, d); r < best {
				best = r
			}
		}
		if len(devices) == 0 {
			best = unknownRank
		}
		total += best
	}
	return total
}

// indexCache keeps the indexes of the topologies a policy has seen. A node
// agent sees one topology (a new one after rediscovery), the simulator one
// per machine model, so a small bound is enough.
type indexCache struct {
	mu sync.Mutex
	m  map[*topology.Topology]*Index
}

const indexCacheSize = 16

func (c *indexCache) get(t *topology.Topology) *Index {
	c.mu.Lock()
	ix, ok := c.m[t]
	c.mu.Unlock()
	if ok {
		return ix
	}
	ix = NewIndex(t)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= indexCacheSize {
		c.m = map[*topology.Topology]*Index{}
	}
	c.m[t] = ix
	return ix
}
