package sim

import (
	"iter"
	"math/bits"
	"slices"
)

// placeRails tries to place the pods of job id on one rail set
// (OneRailSet), each pod on its own node; it reports whether it did.
//
// The rail sets tried are those the stock GPU choice (the NVIDIA device
// plugin's preference, chooseGPUs) gives a pod on the best-scored node of
// each free-GPU set: with one device per GPU a pod's rail set is its
// GPUs' rails, with one device per pod the rail of its first GPU. They
// are tried those with room for a pod on the most nodes first (ties in
// the scheduler's order; job-rails-first-fit: the scheduler's order
// alone, the first being the rails the job's first pod would get anyway).
// The job takes the first rail set with room for all its pods in one
// scalable unit; when none has, the first with room across units.
func (r *runner) placeRails(id int32) (bool, error) {
	job := &r.w.jobs[id]
	sets := r.railSets(job)
	if !r.p.firstFitRails {
		r.byRoom = r.byRoom[:0]
		for set := range sets {
			r.byRoom = append(r.byRoom, roomOf{set: set, nodes: r.room(job, set)})
		}
		slices.SortStableFunc(r.byRoom, func(a, b roomOf) int { return b.nodes - a.nodes })
		sets = func(yield func(uint64) bool) {
			for _, c := range r.byRoom {
				if !yield(c.set) {
					return
				}
			}
		}
	}
	r.across.ok = false
	for set := range sets {
		nodes, oneUnit := r.findNodes(job, set, int(job.pods), nil)
		if len(nodes) < int(job.pods) {
			continue
		}
		if !oneUnit {
			if a := &r.across; !a.ok {
				a.ok, a.set, a.nodes = true, set, append(a.nodes[:0], nodes...)
			}
			continue
		}
		if ok, err := r.placeOn(job, nodes, set, 0); ok || err != nil {
			return ok, err
		}
	}
	// No rail set has room in one unit: the first with room across units.
	if a := &r.across; a.ok {
		return r.placeOn(job, a.nodes, a.set, 0)
	}
	return false, nil
}

// railSets yields the distinct rail sets a pod of job gets from the
// stock GPU choice on the best-scored node of each free-GPU set, in the
// scheduler's order, computing each only when asked for.
func (r *runner) railSets(job *jobSpec) iter.Seq[uint64] {
	return func(yield func(uint64) bool) {
		c, rt, x := r.c, &r.m.rails, r.c.byMask
		g := int(job.gpus)
		r.tried = r.tried[:0]
		for _, b := range x.order {
			if len(x.nodes[b]) == 0 || bits.OnesCount64(x.masks[b]) < g {
				continue
			}
			key := stockKey{free: x.masks[b], gpus: int32(g)}
			gpus, ok := r.stock[key]
			if !ok {
				node := int(x.nodes[b][len(x.nodes[b])-1])
				gpus = c.chooseGPUs(node, g, c.narrowestGPUSet(node, g))
				r.stock[key] = gpus
			}
			set := rt.ofGPUs(gpus)
			if job.devices < job.gpus {
				set = bit(rt.gpuRail[bits.TrailingZeros64(gpus)])
			}
			if slices.Contains(r.tried, set) {
				continue
			}
			r.tried = append(r.tried, set)
			if !yield(set) {
				return
			}
		}
	}
}

// roomOf is a rail set and the nodes with room for a pod on it.
type roomOf struct {
	set   uint64
	nodes int
}

// room counts the nodes whose free GPUs fit a pod of job on rail set set
// (by their free GPUs alone, one look per free-GPU set: devices run short
// far more rarely than GPUs, and findNodes checks them).
func (r *runner) room(job *jobSpec, set uint64) int {
	x, n := r.c.byMask, 0
	for _, b := range x.order {
		if len(x.nodes[b]) > 0 && r.fits(job, x.masks[b], set) {
			n += len(x.nodes[b])
		}
	}
	return n
}

// freeOn counts node's free devices among r.cand.
func (r *runner) freeOn(node int) int {
	free, n := r.c.free(node), 0
	for w, word := range r.cand {
		n += bits.OnesCount64(free[w] & word)
	}
	return n
}

// acrossUnits is the first placement found that spans scalable units.
type acrossUnits struct {
	ok    bool
	set   uint64
	nodes []int32
}

// stockKey is a node's free GPUs and a pod's GPU count: the stock GPU
// choice depends on nothing else.
type stockKey struct {
	free uint64
	gpus int32
}

// fits reports whether a node whose free GPUs are free can give a pod of
// job the GPUs of rail set set: with one device per GPU, enough free GPUs
// of those rails covering every one of them; with fewer devices, enough
// free GPUs with one on the rail.
func (r *runner) fits(job *jobSpec, free, set uint64) bool {
	rt := &r.m.rails
	on := free & rt.gpusOf(set)
	if job.devices < job.gpus {
		return on != 0 && bits.OnesCount64(free) >= int(job.gpus)
	}
	return bits.OnesCount64(on) >= int(job.gpus) && rt.ofGPUs(on) == set
}

// findNodes returns n distinct nodes, in the scheduler's order, that fit
// a pod of job on rail set set and have its devices free on those rails,
// none of skip (nodes holding a pod of the job already): all in one
// scalable unit when one has room (the first unit to reach n such nodes;
// oneUnit), else the first found; fewer when there are not enough.
func (r *runner) findNodes(job *jobSpec, set uint64, n int, skip []int32) (nodes []int32, oneUnit bool) {
	x := r.c.byMask
	r.m.rails.devsOf(r.cand, set)
	r.found = r.found[:0]
	for _, u := range r.touched {
		r.perUnit[u] = 0
	}
	r.touched = r.touched[:0]
	for _, b := range x.order {
		if len(x.nodes[b]) == 0 || !r.fits(job, x.masks[b], set) {
			continue
		}
		ns := x.nodes[b]
		for i := len(ns) - 1; i >= 0; i-- {
			node := int(ns[i])
			if r.freeOn(node) < int(job.devices) || slices.Contains(skip, int32(node)) {
				continue
			}
			r.found = append(r.found, int32(node))
			u := r.unit(node)
			if r.perUnit[u] == 0 {
				r.touched = append(r.touched, u)
			}
			r.perUnit[u]++
			if int(r.perUnit[u]) == n {
				return slices.DeleteFunc(r.found, func(m int32) bool { return r.unit(int(m)) != u }), true
			}
		}
	}
	return r.found[:min(n, len(r.found))], false
}

// placeOn places one pod of job on each of nodes (the job's pods from its
// first-th on) with the GPUs of rail set set (the stock choice among
// them) and gpu-aware's devices among the rails' free devices, and keeps
// them pending; it gives everything back
// and reports false when a pod's GPUs or devices are not on exactly those
// rails after all (a machine whose GPUs share NICs unevenly).
func (r *runner) placeOn(job *jobSpec, nodes []int32, set uint64, first int) (bool, error) {
	c, rt := r.c, &r.m.rails
	need := rt.gpusOf(set)
	r.pend.reset()
	for k, n := range nodes {
		node := int(n)
		gpus := c.chooseGPUs(node, int(job.gpus), c.freeGPU[node]&need)
		got := rt.ofGPUs(gpus)
		if (job.devices >= job.gpus && got != set) || got&set == 0 {
			r.giveBack()
			return false, nil
		}
		rt.devsOf(r.offerAvail, set)
		free := c.free(node)
		for w := range r.offerAvail {
			r.offerAvail[w] &= free[w]
		}
		clear(r.offerMust)
		r.startTiming(int(job.first) + first + k)
		devs, err := r.ask.ask(r.offerAvail, r.offerMust, int(job.devices), gpus)
		r.stopTiming()
		if err == errPolicy {
			r.giveBack()
			return false, nil
		}
		if err != nil {
			return false, err
		}
		if r.m.rails.ofDevices(r.m.devPF, devs) != set {
			r.giveBack() // a GPU's nearest NIC among the rails was another's
			return false, nil
		}
		r.take(node, gpus, devs)
	}
	return true, nil
}
