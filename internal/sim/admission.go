package sim

import (
	"math/bits"
	"slices"
)

// RejectNoRailSet is the rejection of a job for which no set of whole
// rails gives a pod exactly its GPUs (jobrails.Choose's error without a
// set, which the rail controller's webhook returns).
const RejectNoRailSet = "no set of whole rails gives a pod its GPUs"

// admitted is a job of the AdmissionRailSet placement that waits: its
// rail set (the template the controller made), when that was chosen, and
// the pods already started on it (bound, holding their GPUs and devices,
// idle until the job's last pod starts) with when each started; looked
// is whether a re-choice was considered since it became due.
type admitted struct {
	set      uint64
	chosenAt float64
	started  pending
	since    []float64
	looked   bool
}

// admitJob is AdmissionRailSet's arrival of job id: its rail set is
// chosen now (chooseAtAdmission, the cluster as it is at the first pod's
// admission), and every pod that has room on it starts; the others wait
// (retryAdmitted). Unlike job-rails, a job is not rejected when the
// cluster lacks free GPUs for it: the webhook makes its template anyway
// and its pods pend (up to Config.MaxWait here).
func (r *runner) admitJob(id int32) error {
	job := &r.w.jobs[id]
	set, _, ok := r.chooseAtAdmission(job)
	if !ok {
		r.reject(job, RejectNoRailSet)
		return nil
	}
	a := &admitted{set: set, chosenAt: r.now}
	a.started.reset()
	done, err := r.startPods(id, a)
	if err != nil || done {
		return err
	}
	r.waiting = append(r.waiting, id)
	r.admitted[id] = a
	return nil
}

// startPods starts every waiting pod of job id that has room on its rail
// set now, each on a node of its own (findNodes, the scheduler's order);
// when the last has started it commits the job and reports true.
func (r *runner) startPods(id int32, a *admitted) (bool, error) {
	job := &r.w.jobs[id]
	left := int(job.pods) - len(a.started.node)
	nodes, _ := r.findNodes(job, a.set, left, a.started.node)
	for _, node := range nodes { // r.found: placeOn leaves it alone
		ok, err := r.placeOn(job, []int32{node}, a.set, len(a.started.node))
		if err != nil {
			return false, err
		}
		if !ok {
			continue
		}
		p := &r.pend
		a.started.node = append(a.started.node, p.node[0])
		a.started.gpus = append(a.started.gpus, p.gpus[0])
		a.started.devs = append(a.started.devs, p.podDevs(0)...)
		a.started.devOff = append(a.started.devOff, int32(len(a.started.devs)))
		a.since = append(a.since, r.now)
		p.reset()
	}
	if len(a.started.node) < int(job.pods) {
		return false, nil
	}
	r.heldIdle(a)
	p := &r.pend
	p.reset()
	p.node = append(p.node, a.started.node...)
	p.gpus = append(p.gpus, a.started.gpus...)
	p.devs = append(p.devs, a.started.devs...)
	p.devOff = append(p.devOff[:0], a.started.devOff...)
	r.commit(id)
	return true, nil
}

// heldIdle counts the GPU time a's started pods held while the job waited
// for its others, up to now.
func (r *runner) heldIdle(a *admitted) {
	for i, g := range a.started.gpus {
		r.jobs.heldIdleGPUTime += (r.now - a.since[i]) * float64(bits.OnesCount64(g))
	}
	if len(a.since) > 0 && a.since[0] < r.now {
		r.jobs.partlyStarted++
	}
}

// retryAdmitted is retry for AdmissionRailSet, after a departure time at
// which a node freed freed GPUs: each waiting job is first re-chosen
// where the rail controller would (rechooseAdmitted), then its pods that
// have room on its set start. Room for a pod of g GPUs grows only where a
// node freed g GPUs or more (or a job that gave up gave back its started
// pods), so a job is tried only then or when its set just changed; a
// re-choice that fell due since the last look is looked at regardless.
func (r *runner) retryAdmitted(freed int) error {
	r.gaveBack = false
	r.giveUp(r.now)
	if r.gaveBack {
		freed = len(r.m.gpus)
	}
	kept := r.waiting[:0]
	for _, id := range r.waiting {
		a := r.admitted[id]
		grew := int(r.w.jobs[id].gpus) <= freed
		moved := r.rechooseAdmitted(id, a, grew)
		if !grew && !moved {
			kept = append(kept, id)
			continue
		}
		done, err := r.startPods(id, a)
		if err != nil {
			return err
		}
		if done {
			delete(r.admitted, id)
			continue
		}
		kept = append(kept, id)
	}
	r.waiting = kept
	return nil
}

// rechooseAdmitted mirrors railctl.Controller.rechoose: a job is chosen
// again only when no pod of it has started (railctl.Rechoose: a bound pod
// holds the old set), its set was chosen at least Config.RechooseAfter
// ago (its pods unschedulable that long), and the rail set jobrails
// would choose now is another one with room for all its pods; then the
// job waits on that set from now on, and rechooseAdmitted reports true.
// The controller's loop period is not modelled: the check runs at
// departure times (room grows only then), when room grew for the job
// (grew) or the re-choice fell due since the last look.
func (r *runner) rechooseAdmitted(id int32, a *admitted, grew bool) bool {
	job := &r.w.jobs[id]
	if len(a.started.node) > 0 || r.now-a.chosenAt < r.cfg.RechooseAfter || (a.looked && !grew) {
		return false
	}
	a.looked = true
	set, room, ok := r.chooseAtAdmission(job)
	if !ok || set == a.set || room < int(job.pods) {
		return false
	}
	a.set, a.chosenAt, a.looked = set, r.now, false
	r.jobs.rechosen++
	return true
}

// dropAdmitted gives back the started pods of a waiting job that gave up
// (not placed: they never ran the job, so no departure is counted).
func (r *runner) dropAdmitted(id int32) {
	a := r.admitted[id]
	if a == nil {
		return
	}
	r.heldIdle(a)
	c := r.c
	r.gaveBack = r.gaveBack || len(a.started.node) > 0
	for i, node := range a.started.node {
		c.releaseDevices(int(node), a.started.podDevs(i))
		c.setFreeGPUs(int(node), c.freeGPU[node]|a.started.gpus[i])
		c.updateStranded(int(node))
	}
	delete(r.admitted, id)
}

// chooseAtAdmission is jobrails.Choose's rule on the simulated cluster
// now: of the sets of whole rails that give a pod exactly its GPUs
// (admissionSets), the one with room for a pod on the most nodes, ties
// the lowest rails; room is counted by free GPUs as job-rails counts it
// (fits, room). It returns the set and its room; ok is false when no set
// of whole rails gives a pod its GPUs. Like Choose it returns the best
// set even when its room is short of the job's pods: the controller's
// webhook makes the template anyway and the pods wait.
func (r *runner) chooseAtAdmission(job *jobSpec) (set uint64, room int, ok bool) {
	sets := r.admissionSets(job)
	if len(sets) == 0 {
		return 0, 0, false
	}
	if cap(r.roomBy) < len(sets) {
		r.roomBy = make([]int, len(sets))
	}
	counts := r.roomBy[:len(sets)]
	clear(counts)
	x, g := r.c.byMask, int(job.gpus)
	for _, b := range x.order {
		if len(x.nodes[b]) == 0 || bits.OnesCount64(x.masks[b]) < g {
			continue
		}
		key := fitKey{free: x.masks[b], gpus: job.gpus, oneRail: job.devices < job.gpus}
		fit, known := r.fitting[key]
		if !known {
			for i, s := range sets {
				if r.fits(job, x.masks[b], s) {
					fit = append(fit, int16(i))
				}
			}
			r.fitting[key] = fit
		}
		for _, i := range fit {
			counts[i] += len(x.nodes[b])
		}
	}
	best := 0
	for i, n := range counts {
		if n > counts[best] {
			best = i // sets are in jobrails' order: the first best is the lowest
		}
	}
	return sets[best], counts[best], true
}

// fitKey is a node's free GPUs and a pod's shape: which candidate sets
// fit depends on nothing else.
type fitKey struct {
	free    uint64
	gpus    int32
	oneRail bool
}

// admissionSets is jobrails.Choose's candidates for a pod of job, in the
// order of jobrails' lower (ascending rail lists compared element by
// element, a prefix first): every set of whole rails whose GPUs are
// exactly the pod's GPUs. With one device per pod (fewer devices than
// GPUs, a case jobrails' templates do not have) a pod's rail set is its
// first GPU's rail, as job-rails models it: every rail is a candidate.
func (r *runner) admissionSets(job *jobSpec) []uint64 {
	oneRail := job.devices < job.gpus
	key := fitKey{gpus: job.gpus, oneRail: oneRail}
	if s, ok := r.candidates[key]; ok {
		return s
	}
	rt := &r.m.rails
	rails := len(rt.railGPUs) - 1
	var out []uint64
	if oneRail {
		for i := range rails {
			if rt.railGPUs[i] != 0 {
				out = append(out, bit(i))
			}
		}
	} else if rails <= maxAdmissionRails {
		for s := uint64(1); s < 1<<rails; s++ {
			if bits.OnesCount64(rt.gpusOf(s)) == int(job.gpus) && allRailsHaveGPUs(rt, s) {
				out = append(out, s)
			}
		}
		slices.SortFunc(out, railsCompare)
	}
	r.candidates[key] = out
	return out
}

// maxAdmissionRails is jobrails' maxRails: Choose refuses a node with
// more rails.
const maxAdmissionRails = 16

func allRailsHaveGPUs(rt *railTables, s uint64) bool {
	for ; s != 0; s &= s - 1 {
		if rt.railGPUs[bits.TrailingZeros64(s)] == 0 {
			return false
		}
	}
	return true
}

// railsCompare orders rail sets as jobrails' lower does (its comparison
// of ascending rail lists, slices.CompareFunc): dense rail indexes are in
// the rails' numeric order, so comparing them compares the rails.
func railsCompare(a, b uint64) int {
	for a != 0 && b != 0 {
		x, y := bits.TrailingZeros64(a), bits.TrailingZeros64(b)
		if x != y {
			return x - y
		}
		a, b = a&(a-1), b&(b-1)
	}
	switch {
	case a == 0 && b == 0:
		return 0
	case a == 0:
		return -1
	}
	return 1
}
