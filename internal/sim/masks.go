package sim

import (
	"math/bits"
	"slices"
)

// maskIndex keeps the nodes by their exact set of free GPUs, for the
// placement of a job on one rail set (which needs nodes where given GPUs
// are free, not just enough of them). Buckets are never removed: there
// are at most as many as distinct free sets (256 on an 8-GPU machine).
type maskIndex struct {
	bucket map[uint64]int32 // free set -> bucket
	masks  []uint64         // bucket -> free set
	nodes  [][]int32        // bucket -> nodes
	pos    []int32          // node -> its place in its bucket
	// order lists the buckets as the scheduler scores nodes: fewest free
	// GPUs first (most-allocated) or most first (least-allocated), then
	// by free set.
	order       []int32
	leastFirst  bool
	bucketOfNow []int32 // node -> its bucket
}

func newMaskIndex(free []uint64, s Scheduler) *maskIndex {
	x := &maskIndex{bucket: map[uint64]int32{}, pos: make([]int32, len(free)), bucketOfNow: make([]int32, len(free)), leastFirst: s == LeastAllocated}
	for n, f := range free {
		x.add(n, f)
	}
	return x
}

func (x *maskIndex) less(a, b int32) int {
	ca, cb := bits.OnesCount64(x.masks[a]), bits.OnesCount64(x.masks[b])
	if ca != cb {
		if x.leastFirst {
			return cb - ca
		}
		return ca - cb
	}
	if x.masks[a] < x.masks[b] {
		return -1
	}
	if x.masks[a] > x.masks[b] {
		return 1
	}
	return 0
}

func (x *maskIndex) add(node int, free uint64) {
	b, ok := x.bucket[free]
	if !ok {
		b = int32(len(x.masks))
		x.bucket[free] = b
		x.masks = append(x.masks, free)
		x.nodes = append(x.nodes, nil)
		i, _ := slices.BinarySearchFunc(x.order, b, x.less)
		x.order = slices.Insert(x.order, i, b)
	}
	x.pos[node] = int32(len(x.nodes[b]))
	x.nodes[b] = append(x.nodes[b], int32(node))
	x.bucketOfNow[node] = b
}

func (x *maskIndex) remove(node int) {
	b := x.bucketOfNow[node]
	ns := x.nodes[b]
	i := x.pos[node]
	last := ns[len(ns)-1]
	ns[i] = last
	x.pos[last] = i
	x.nodes[b] = ns[:len(ns)-1]
}

// move records that node's free set changed to free.
func (x *maskIndex) move(node int, free uint64) {
	if x.masks[x.bucketOfNow[node]] == free {
		return
	}
	x.remove(node)
	x.add(node, free)
}
