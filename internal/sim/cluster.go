package sim

import (
	"fmt"
	"math/bits"
	"slices"
)

// cluster is the state of one run: which GPUs and devices of each node are
// free. Every slice is indexed by node (times words or PFs) and holds no
// pointers, so the garbage collector never scans it.
type cluster struct {
	m            *machine
	cfg          *Config
	freeGPU      []uint64 // per node: bit g set when GPU g is free
	devFree      []uint64 // node*m.words+w: bitset of the node's free devices
	pfFree       []int32  // node*len(PFs)+p: free devices of PF p
	devFreeCount []int32
	stranded     []int32 // per node: free devices no free GPU reaches with GPUDirect
	strandedSum  int

	// buckets[c] holds the nodes with c free GPUs; pos is each node's place.
	buckets [][]int32
	pos     []int

	switchCounts []int // scratch for chooseGPUs

	// byMask indexes nodes by their free GPUs, for OneRailSet (nil for
	// other contenders).
	byMask *maskIndex

	numaGPUs []uint64 // dense NUMA -> mask of its GPUs
	masks    []uint64 // NUMA masks, narrowest first, then lowest
}

func newCluster(m *machine, cfg *Config) *cluster {
	n, nd, np, ng := cfg.Nodes, len(m.devs), len(m.topo.NICs), len(m.gpus)
	c := &cluster{
		m:            m,
		cfg:          cfg,
		freeGPU:      make([]uint64, n),
		devFree:      make([]uint64, n*m.words),
		pfFree:       make([]int32, n*np),
		devFreeCount: make([]int32, n),
		stranded:     make([]int32, n),
		buckets:      make([][]int32, ng+1),
		pos:          make([]int, n),
		numaGPUs:     make([]uint64, m.numas()),
		switchCounts: make([]int, slices.Max(m.gpuSwitch)+1),
	}
	all := uint64(1)<<ng - 1
	if ng == 64 {
		all = ^uint64(0)
	}
	for i := 0; i < n; i++ {
		c.freeGPU[i] = all
		c.devFreeCount[i] = int32(nd)
		c.pos[i] = len(c.buckets[ng])
		c.buckets[ng] = append(c.buckets[ng], int32(i))
		for d := 0; d < nd; d++ {
			c.devFree[i*m.words+d/64] |= 1 << (d % 64)
		}
		for _, p := range m.devPF {
			c.pfFree[i*np+int(p)]++
		}
	}
	for g, k := range m.gpuNUMA {
		c.numaGPUs[k] |= 1 << g
	}
	if m.numas() <= 8 { // kubelet's Topology Manager supports at most 8 NUMA nodes
		for mask := uint64(1); mask < 1<<m.numas(); mask++ {
			c.masks = append(c.masks, mask)
		}
		slices.SortStableFunc(c.masks, func(a, b uint64) int { return bits.OnesCount64(a) - bits.OnesCount64(b) })
	}
	return c
}

// setFreeGPUs changes a node's free GPUs, keeping the buckets in step.
func (c *cluster) setFreeGPUs(node int, free uint64) {
	old := bits.OnesCount64(c.freeGPU[node])
	now := bits.OnesCount64(free)
	c.freeGPU[node] = free
	if c.byMask != nil {
		c.byMask.move(node, free)
	}
	if old == now {
		return
	}
	b := c.buckets[old]
	i := c.pos[node]
	last := b[len(b)-1]
	b[i] = last
	c.pos[last] = i
	c.buckets[old] = b[:len(b)-1]
	c.pos[node] = len(c.buckets[now])
	c.buckets[now] = append(c.buckets[now], int32(node))
}

// free returns the bitset of node's free devices.
func (c *cluster) free(node int) []uint64 {
	w := c.m.words
	return c.devFree[node*w : node*w+w : node*w+w]
}

// schedule picks a node with enough free GPUs and devices, or -1.
func (c *cluster) schedule(gpus, devices int) int {
	try := func(k int) int {
		b := c.buckets[k]
		for i := len(b) - 1; i >= 0; i-- {
			if int(c.devFreeCount[b[i]]) >= devices {
				return int(b[i])
			}
		}
		return -1
	}
	if c.cfg.Scheduler == LeastAllocated {
		for k := len(c.buckets) - 1; k >= gpus; k-- {
			if n := try(k); n >= 0 {
				return n
			}
		}
		return -1
	}
	for k := gpus; k < len(c.buckets); k++ {
		if n := try(k); n >= 0 {
			return n
		}
	}
	return -1
}

// freeDevsIn counts a node's free devices on the NUMA nodes of mask.
func (c *cluster) freeDevsIn(node int, mask uint64) int {
	np := len(c.m.topo.NICs)
	n := 0
	for p := 0; p < np; p++ {
		if mask&(1<<c.m.pfNUMA[p]) != 0 {
			n += int(c.pfFree[node*np+p])
		}
	}
	return n
}

func (c *cluster) gpusIn(mask uint64) uint64 {
	var g uint64
	for k := 0; k < c.m.numas(); k++ {
		if mask&(1<<k) != 0 {
			g |= c.numaGPUs[k]
		}
	}
	return g
}

// numaHint models the Topology Manager's merged NUMA affinity for a pod
// asking gpus GPUs and devices NIC devices: the narrowest (then lowest) set
// of NUMA nodes with enough free GPUs and devices; failing that, the
// narrowest with enough GPUs. ok is false when no set has enough GPUs.
// preferred reports whether the hint satisfies both resources.
func (c *cluster) numaHint(node, gpus, devices int) (mask uint64, preferred, ok bool) {
	free := c.freeGPU[node]
	var fallback uint64
	for _, m := range c.masks {
		if bits.OnesCount64(free&c.gpusIn(m)) < gpus {
			continue
		}
		if c.freeDevsIn(node, m) >= devices {
			return m, true, true
		}
		if fallback == 0 {
			fallback = m
		}
	}
	return fallback, false, fallback != 0
}

// minWidth is the narrowest NUMA set that could hold gpus GPUs and devices
// devices on an empty node: kubelet's yardstick for a "preferred" hint.
func (c *cluster) minWidth(gpus, devices int) int {
	for _, m := range c.masks {
		if bits.OnesCount64(c.gpusIn(m)) < gpus {
			continue
		}
		n := 0
		for _, k := range c.m.devNUMA {
			if m&(1<<k) != 0 {
				n++
			}
		}
		if n >= devices {
			return bits.OnesCount64(m)
		}
	}
	return c.m.numas()
}

// chooseGPUs models the NVIDIA device plugin's preference among the free
// GPUs: from the candidates first (the Topology Manager's NUMA set; with no
// alignment, the narrowest set of NUMA nodes with enough free GPUs), GPUs
// sharing a PCIe switch: the fullest-fitting switch when one switch can hold
// the whole request (best fit, keeping whole switches for larger pods),
// otherwise whole switches, largest first. Candidates exhausted, the other
// free GPUs follow the same rule.
func (c *cluster) chooseGPUs(node, need int, cand uint64) uint64 {
	free := c.freeGPU[node]
	var chosen uint64
	for _, pool := range [2]uint64{free & cand, free &^ cand} {
		for need > 0 && pool != 0 {
			counts := c.switchCounts
			clear(counts)
			for g := range c.m.gpus {
				if pool&(1<<g) != 0 {
					counts[c.m.gpuSwitch[g]]++
				}
			}
			best, bestCount, fits := -1, 0, false
			for sw, n := range counts {
				if n == 0 {
					continue
				}
				switch {
				case n >= need && (!fits || n < bestCount || (n == bestCount && sw < best)):
					best, bestCount, fits = sw, n, true
				case !fits && n < need && (n > bestCount || (n == bestCount && sw < best)):
					best, bestCount = sw, n
				}
			}
			for g := range c.m.gpus {
				if need > 0 && pool&(1<<g) != 0 && c.m.gpuSwitch[g] == best {
					chosen |= 1 << g
					pool &^= 1 << g
					need--
				}
			}
		}
	}
	return chosen
}

// narrowestGPUSet returns the narrowest NUMA set with need free GPUs (all
// GPUs when the machine has too many NUMA nodes to enumerate).
func (c *cluster) narrowestGPUSet(node, need int) uint64 {
	for _, m := range c.masks {
		if g := c.gpusIn(m); bits.OnesCount64(c.freeGPU[node]&g) >= need {
			return g
		}
	}
	return ^uint64(0)
}

// updateStranded recomputes a node's stranded devices: free devices on PFs
// that some GPU reaches with GPUDirect (PIX or PXB) while every such GPU of
// the node is busy. (PFs that no GPU reaches with GPUDirect, such as
// storage NICs, are never counted.)
func (c *cluster) updateStranded(node int) {
	np := len(c.m.topo.NICs)
	s := int32(0)
	for p := 0; p < np; p++ {
		if c.m.gdrMask[p] != 0 && c.freeGPU[node]&c.m.gdrMask[p] == 0 {
			s += c.pfFree[node*np+p]
		}
	}
	c.strandedSum += int(s - c.stranded[node])
	c.stranded[node] = s
}

// takeDevices marks devices busy on node; release frees them.
func (c *cluster) takeDevices(node int, devs []int32) {
	np, free := len(c.m.topo.NICs), c.free(node)
	for _, d := range devs {
		free[d/64] &^= 1 << (d % 64)
		c.pfFree[node*np+int(c.m.devPF[d])]--
	}
	c.devFreeCount[node] -= int32(len(devs))
}

func (c *cluster) releaseDevices(node int, devs []int32) {
	np, free := len(c.m.topo.NICs), c.free(node)
	for _, d := range devs {
		free[d/64] |= 1 << (d % 64)
		c.pfFree[node*np+int(c.m.devPF[d])]++
	}
	c.devFreeCount[node] += int32(len(devs))
}

// checkEmpty verifies, once every pod has left, that every GPU and device
// is free again and the stranded count is back to zero.
func (c *cluster) checkEmpty() error {
	ng, nd := len(c.m.gpus), len(c.m.devs)
	for n := range c.freeGPU {
		if bits.OnesCount64(c.freeGPU[n]) != ng || int(c.devFreeCount[n]) != nd || count(c.free(n)) != nd {
			return fmt.Errorf("sim: node %d holds %d GPUs and %d devices after every pod left", n, ng-bits.OnesCount64(c.freeGPU[n]), nd-int(c.devFreeCount[n]))
		}
	}
	if c.strandedSum != 0 {
		return fmt.Errorf("sim: %d devices stranded on an empty cluster", c.strandedSum)
	}
	return nil
}
