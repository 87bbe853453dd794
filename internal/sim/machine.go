package sim

import (
	"math/bits"
	"slices"

	"github.com/railyard-io/railyard/internal/alloc"
	"github.com/railyard-io/railyard/internal/topology"
)

// machine is the per-model data every node shares, on top of the
// policies' own per-topology index (alloc.Index): which of the index's
// devices a node offers (each NIC's VFs, or the NIC itself when it has
// none; address order, as kubelet sorts device IDs), and the tables the
// simulator consults on every event. A node's devices are numbered
// 0..len(devs)-1 and kept free or busy in bitsets of words uint64 each.
type machine struct {
	topo *topology.Topology
	ix   *alloc.Index

	devs    []string // device addresses, sorted
	devOf   []int32  // index position -> device, -1 for a PF with VFs
	devPF   []int32  // device -> index in topo.NICs
	devNUMA []int8   // device -> dense NUMA index
	words   int      // uint64 words in a bitset of the node's devices

	pfNUMA  []int      // PF -> dense NUMA index
	pfRoot  []int      // PF -> its host bridge (PCIe root), numbered
	gdrMask []uint64   // PF -> GPUs with a GPUDirect (PIX/PXB) class to it
	numaSet [][]uint64 // dense NUMA -> bitset of its devices

	gpus      []string
	gpuNUMA   []int // GPU -> dense NUMA index
	gpuRoot   []int // GPU -> its host bridge, numbered as pfRoot
	gpuSwitch []int // GPU -> switch group (GPUs below one PCIe switch)
	numaID    []int // dense NUMA index -> NUMA node (-1: unknown)

	rails railTables
}

func newMachine(t *topology.Topology) *machine {
	m := &machine{topo: t, ix: alloc.NewIndex(t)}
	// Dense NUMA indexes in ascending NUMA id order.
	for _, g := range t.GPUs {
		m.numaID = append(m.numaID, g.NUMA)
	}
	for _, n := range t.NICs {
		m.numaID = append(m.numaID, n.NUMA)
	}
	slices.Sort(m.numaID)
	m.numaID = slices.Compact(m.numaID)
	dense := func(id int) int { i, _ := slices.BinarySearch(m.numaID, id); return i }
	roots := map[string]int{}
	root := func(addr string) int {
		hb := ""
		if d, ok := t.Device(addr); ok {
			hb = d.HostBridge
		}
		if _, ok := roots[hb]; !ok {
			roots[hb] = len(roots)
		}
		return roots[hb]
	}

	for _, n := range t.NICs {
		m.pfNUMA = append(m.pfNUMA, dense(n.NUMA))
		m.pfRoot = append(m.pfRoot, root(n.PCI))
	}
	m.devOf = make([]int32, m.ix.Len())
	for i := range m.devOf {
		addr, pf := m.ix.DeviceAt(i)
		if nic := t.NICs[pf]; len(nic.VFs) > 0 && addr == nic.PCI {
			m.devOf[i] = -1 // a PF with VFs hands out its VFs
			continue
		}
		m.devOf[i] = int32(len(m.devs))
		m.devs = append(m.devs, addr)
		m.devPF = append(m.devPF, int32(pf))
		m.devNUMA = append(m.devNUMA, int8(m.pfNUMA[pf]))
	}
	m.words = (len(m.devs) + 63) / 64
	m.numaSet = make([][]uint64, len(m.numaID))
	for k := range m.numaSet {
		m.numaSet[k] = make([]uint64, m.words)
	}
	for d, k := range m.devNUMA {
		m.numaSet[k][d/64] |= 1 << (d % 64)
	}

	m.gdrMask = make([]uint64, len(t.NICs))
	switches := map[string]int{}
	for g, gpu := range t.GPUs {
		m.gpus = append(m.gpus, gpu.PCI)
		m.gpuNUMA = append(m.gpuNUMA, dense(gpu.NUMA))
		m.gpuRoot = append(m.gpuRoot, root(gpu.PCI))
		key := switchKey(t, gpu.PCI)
		if _, ok := switches[key]; !ok {
			switches[key] = len(switches)
		}
		m.gpuSwitch = append(m.gpuSwitch, switches[key])
		for p := range t.NICs {
			if m.ix.ClassAt(g, p).GPUDirect() {
				m.gdrMask[p] |= 1 << g
			}
		}
	}
	m.rails = newRailTables(m)
	return m
}

// device maps an answered address to the node's device, -1 if unknown.
func (m *machine) device(addr string) int32 {
	if i, ok := m.ix.Lookup(addr); ok {
		return m.devOf[i]
	}
	return -1
}

// numas is the number of distinct NUMA nodes.
func (m *machine) numas() int { return len(m.numaID) }

// bestClass is the class of GPU g's nearest device among devs.
func (m *machine) bestClass(g int, devs []int32) topology.Class {
	best := topology.ClassUnknown
	for _, d := range devs {
		if cl := m.ix.ClassAt(g, int(m.devPF[d])); best == topology.ClassUnknown || cl.Rank() < best.Rank() {
			best = cl
		}
	}
	return best
}

// switchKey names the PCIe switch a GPU sits below: the first bridge below
// the root port (a switch's upstream port) when there is one, else the root
// port, else the host bridge (VMs that hide the PCIe tree).
func switchKey(t *topology.Topology, addr string) string {
	var chain []string
	d, ok := t.Device(addr)
	for ok && d.Parent != "" && len(chain) < 64 {
		chain = append(chain, d.Parent)
		d, ok = t.Device(d.Parent)
	}
	slices.Reverse(chain) // root port first
	switch {
	case len(chain) >= 2:
		return chain[1]
	case len(chain) == 1:
		return chain[0]
	}
	if d, ok := t.Device(addr); ok {
		return d.HostBridge
	}
	return addr
}

// bitset helpers over the words of one node's devices.

func count(set []uint64) int {
	n := 0
	for _, w := range set {
		n += bits.OnesCount64(w)
	}
	return n
}

func has(set []uint64, d int32) bool { return set[d/64]&(1<<(d%64)) != 0 }
