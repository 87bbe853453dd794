package sim

import (
	"math/bits"
	"slices"
)

// offRail is the bit of a rail set standing for devices on NICs that
// serve no GPU (storage NICs): they are cabled to no rail's leaf.
const offRail = 63

// railTables holds the machine's rails as topology.NICRails numbers them
// (the one numbering of pools, DRA attributes and the fabric's labels: a
// NIC's rail is the first GPU it serves), so that rail r of every node is
// cabled to leaf r of its scalable unit. Inside the simulator rails are
// dense indexes in that order (railID gives the rail's number) and rail
// sets are bitmasks of them; a NIC that serves no GPU (a storage NIC) has
// no rail (offRail). A 64th rail would share offRail's bit.
type railTables struct {
	pfRail   []int      // PF -> dense rail, -1 without
	railID   []int      // dense rail -> topology.NICRails' number
	gpuRail  []int      // GPU -> the dense rail of its NIC (topology.Rails), -1 without
	railGPUs []uint64   // dense rail -> its GPUs; no rail last
	railDevs [][]uint64 // dense rail -> bitset of the devices of its NIC; no rail last
}

func newRailTables(m *machine) railTables {
	t := m.topo
	rt := railTables{pfRail: make([]int, len(t.NICs)), gpuRail: make([]int, len(m.gpus))}
	numbers := t.NICRails()
	for _, n := range t.NICs {
		if id, ok := numbers[n.PCI]; ok {
			rt.railID = append(rt.railID, id)
		}
	}
	slices.Sort(rt.railID)
	rt.railID = slices.Compact(rt.railID)[:min(len(rt.railID), offRail)]
	pf := map[string]int{}
	for p, n := range t.NICs {
		pf[n.PCI] = p
		rt.pfRail[p] = -1
		if id, ok := numbers[n.PCI]; ok {
			if r, found := slices.BinarySearch(rt.railID, id); found {
				rt.pfRail[p] = r
			}
		}
	}
	for g := range rt.gpuRail {
		rt.gpuRail[g] = -1
		if g < len(t.Rails) {
			if p, ok := pf[t.Rails[g].NIC]; ok {
				rt.gpuRail[g] = rt.pfRail[p]
			}
		}
	}
	rails := len(rt.railID)
	rt.railGPUs = make([]uint64, rails+1)
	rt.railDevs = make([][]uint64, rails+1)
	for r := range rt.railDevs {
		rt.railDevs[r] = make([]uint64, m.words)
	}
	for g, r := range rt.gpuRail {
		rt.railGPUs[rt.slot(r)] |= 1 << g
	}
	for d, p := range m.devPF {
		rt.railDevs[rt.slot(rt.pfRail[p])][d/64] |= 1 << (d % 64)
	}
	return rt
}

// slot is rail r's place in railGPUs and railDevs (the last for no rail).
func (rt *railTables) slot(r int) int {
	if r < 0 {
		return len(rt.railDevs) - 1
	}
	return r
}

// bit is rail r's bit in a rail set.
func bit(r int) uint64 {
	if r < 0 {
		return 1 << offRail
	}
	return 1 << r
}

// ofDevices is the rail set of devices.
func (rt *railTables) ofDevices(devPF []int32, devs []int32) uint64 {
	var set uint64
	for _, d := range devs {
		set |= bit(rt.pfRail[devPF[d]])
	}
	return set
}

// ofGPUs is the rail set of GPUs.
func (rt *railTables) ofGPUs(gpus uint64) uint64 {
	var set uint64
	for ; gpus != 0; gpus &= gpus - 1 {
		set |= bit(rt.gpuRail[bits.TrailingZeros64(gpus)])
	}
	return set
}

// gpusOf is the GPUs of the rails of set.
func (rt *railTables) gpusOf(set uint64) uint64 {
	var g uint64
	for ; set != 0; set &= set - 1 {
		r := bits.TrailingZeros64(set)
		if r == offRail {
			r = -1
		}
		g |= rt.railGPUs[rt.slot(r)]
	}
	return g
}

// devsOf sets dst to the devices of the rails of set.
func (rt *railTables) devsOf(dst []uint64, set uint64) {
	clear(dst)
	for ; set != 0; set &= set - 1 {
		r := bits.TrailingZeros64(set)
		if r == offRail {
			r = -1
		}
		for w, word := range rt.railDevs[rt.slot(r)] {
			dst[w] |= word
		}
	}
}
