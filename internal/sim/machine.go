package sim

import (
	"cmp"
	"slices"

	"github.com/railyard-io/railyard/internal/topology"
)

// machine is the per-model data every node shares: the devices a node
// offers (each NIC's VFs, or the NIC itself when it has none), sorted by
// address like kubelet sorts device IDs, and the tables the simulator
// consults on every event.
type machine struct {
	topo *topology.Topology

	devs    []string         // device IDs, sorted
	devIdx  map[string]int32 // ID -> index in devs
	devPF   []int            // device -> index in topo.NICs
	devNUMA []int            // device -> dense NUMA index

	pfNUMA  []int              // PF -> dense NUMA index
	gdrMask []uint64           // PF -> GPUs with a GPUDirect (PIX/PXB) class to it
	class   [][]topology.Class // GPU x PF

	gpus      []string
	gpuNUMA   []int // GPU -> dense NUMA index
	gpuSwitch []int // GPU -> switch group (GPUs below one PCIe switch)
	numas     int   // distinct NUMA nodes
}

func newMachine(t *topology.Topology) *machine {
	m := &machine{topo: t, devIdx: map[string]int32{}}
	numaIdx := map[int]int{}
	dense := func(n int) int {
		if i, ok := numaIdx[n]; ok {
			return i
		}
		numaIdx[n] = len(numaIdx)
		return numaIdx[n]
	}
	// Dense NUMA indexes in ascending NUMA id order.
	var ids []int
	for _, g := range t.GPUs {
		ids = append(ids, g.NUMA)
	}
	for _, n := range t.NICs {
		ids = append(ids, n.NUMA)
	}
	slices.Sort(ids)
	for _, id := range ids {
		dense(id)
	}
	m.numas = len(numaIdx)

	type dev struct {
		id string
		pf int
	}
	var devs []dev
	for p, n := range t.NICs {
		m.pfNUMA = append(m.pfNUMA, dense(n.NUMA))
		if len(n.VFs) == 0 {
			devs = append(devs, dev{n.PCI, p})
			continue
		}
		for _, vf := range n.VFs {
			devs = append(devs, dev{vf.PCI, p})
		}
	}
	slices.SortFunc(devs, func(a, b dev) int { return cmp.Compare(a.id, b.id) })
	for i, d := range devs {
		m.devs = append(m.devs, d.id)
		m.devIdx[d.id] = int32(i)
		m.devPF = append(m.devPF, d.pf)
		m.devNUMA = append(m.devNUMA, m.pfNUMA[d.pf])
	}

	m.gdrMask = make([]uint64, len(t.NICs))
	switches := map[string]int{}
	for g, gpu := range t.GPUs {
		m.gpus = append(m.gpus, gpu.PCI)
		m.gpuNUMA = append(m.gpuNUMA, dense(gpu.NUMA))
		key := switchKey(t, gpu.PCI)
		if _, ok := switches[key]; !ok {
			switches[key] = len(switches)
		}
		m.gpuSwitch = append(m.gpuSwitch, switches[key])
		row := make([]topology.Class, len(t.NICs))
		for p, n := range t.NICs {
			row[p] = t.Class(gpu.PCI, n.PCI)
			if row[p].GPUDirect() {
				m.gdrMask[p] |= 1 << g
			}
		}
		m.class = append(m.class, row)
	}
	return m
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
