package sim

import (
	"math/bits"
	"slices"

	"github.com/railyard-io/railyard/internal/fabric"
)

// RejectRails is the rejection of a job that waited Config.MaxWait for a
// placement on one rail set.
const RejectRails = "no placement on one rail set within max-wait"

// pending holds the pods of the job being placed: taken from the cluster
// (so the job's next pod sees them busy) but not yet running, so that a
// job whose last pod does not fit gives everything back.
type pending struct {
	node   []int32
	gpus   []uint64
	devOff []int32 // pod -> its first device in devs; one more at the end
	devs   []int32
}

func (p *pending) reset() {
	p.node, p.gpus, p.devOff, p.devs = p.node[:0], p.gpus[:0], append(p.devOff[:0], 0), p.devs[:0]
}

func (p *pending) podDevs(i int) []int32 { return p.devs[p.devOff[i]:p.devOff[i+1]] }

// take marks a pod's GPUs and devices busy and keeps it pending.
func (r *runner) take(node int, gpus uint64, devs []int32) {
	c := r.c
	c.setFreeGPUs(node, c.freeGPU[node]&^gpus)
	c.takeDevices(node, devs)
	c.updateStranded(node)
	p := &r.pend
	p.node, p.gpus = append(p.node, int32(node)), append(p.gpus, gpus)
	p.devs = append(p.devs, devs...)
	p.devOff = append(p.devOff, int32(len(p.devs)))
}

// giveBack frees the pending pods of a job that could not be placed.
func (r *runner) giveBack() {
	c, p := r.c, &r.pend
	for i, node := range p.node {
		c.releaseDevices(int(node), p.podDevs(i))
		c.setFreeGPUs(int(node), c.freeGPU[node]|p.gpus[i])
		c.updateStranded(int(node))
	}
	p.reset()
}

// arrive places job id, or rejects it, or (one rail set, several pods,
// enough free GPUs but not on one rail set) keeps it waiting.
func (r *runner) arrive(id int32) error {
	job := &r.w.jobs[id]
	if job.pods > 1 {
		r.jobs.arrived++
	}
	if r.p.Job == AdmissionRailSet && job.pods > 1 {
		return r.admitJob(id)
	}
	if r.p.Job == OneRailSet && job.pods > 1 {
		ok, err := r.placeRails(id)
		switch {
		case err != nil:
			return err
		case ok:
			r.commit(id)
		case r.fitsByCount(job):
			r.waiting = append(r.waiting, id)
		default:
			r.reject(job, RejectNoNode)
		}
		return nil
	}
	reason, err := r.placePerPod(id)
	if err != nil {
		return err
	}
	if reason != "" {
		r.reject(job, reason)
		return nil
	}
	r.commit(id)
	return nil
}

func (r *runner) reject(job *jobSpec, reason string) {
	r.res.Rejections[reason] += int(job.pods)
	if job.pods > 1 {
		r.jobs.rejected++
	}
}

// fitsByCount reports whether the cluster has free GPUs enough for the
// job's pods, counted per node as the scheduler counts them (several pods
// may share a node): what a placement without the rail constraint needs.
func (r *runner) fitsByCount(job *jobSpec) bool {
	g, room := int(job.gpus), 0
	for k := g; k < len(r.c.buckets); k++ {
		room += len(r.c.buckets[k]) * (k / g)
		if room >= int(job.pods) {
			return true
		}
	}
	return false
}

// placePerPod places the job's pods one by one as the scheduler, kubelet
// and the policy place a pod; it returns why a pod could not be placed
// (after giving back the job's others), "" when all are pending.
func (r *runner) placePerPod(id int32) (string, error) {
	job := &r.w.jobs[id]
	r.pend.reset()
	for k := range int(job.pods) {
		reason, err := r.placePod(job, int(job.first)+k)
		if err != nil {
			return "", err
		}
		if reason != "" {
			r.giveBack()
			return reason, nil
		}
	}
	return "", nil
}

// placePod places one pod of job on its own: the scheduler's node, the
// Topology Manager's admission, the stock GPU choice, the policy's
// devices at its binding time.
func (r *runner) placePod(job *jobSpec, pod int) (string, error) {
	c := r.c
	gpusWanted, size := int(job.gpus), int(job.devices)
	node := c.schedule(gpusWanted, size)
	if node < 0 {
		return RejectNoNode, nil
	}
	// Kubelet admission: the Topology Manager's NUMA hint.
	tmOn := r.cfg.TopologyPolicy != TMNone && len(c.masks) > 0
	var cand, mask uint64
	if tmOn {
		hint, preferred, ok := c.numaHint(node, gpusWanted, size)
		width := bits.OnesCount64(hint)
		if !ok || (r.cfg.TopologyPolicy == TMSingleNUMA && (!preferred || width > 1)) ||
			(r.cfg.TopologyPolicy == TMRestricted && (!preferred || width > c.minWidth(gpusWanted, size))) {
			return RejectTopology, nil
		}
		mask, cand = hint, c.gpusIn(hint)
	} else {
		cand = c.narrowestGPUSet(node, gpusWanted)
	}
	gpus := c.chooseGPUs(node, gpusWanted, cand)

	r.startTiming(pod)
	spec := podSpec{devices: job.devices, gpusKnown: r.w.gpusKnown[pod]}
	devs, err := r.decide(node, &spec, gpus, mask, tmOn)
	r.stopTiming()
	if err == errPolicy {
		return RejectPolicy, nil
	}
	if err != nil {
		return "", err
	}
	r.take(node, gpus, devs)
	return "", nil
}

func (r *runner) startTiming(pod int) {
	r.ask.elapsed, r.ask.timed = 0, pod%r.timeEvery == 0
}

func (r *runner) stopTiming() {
	if r.ask.timed {
		r.lat = append(r.lat, r.ask.elapsed)
	}
}

// commit starts the pending pods of job id now: they run its lifetime,
// and what they got is counted.
func (r *runner) commit(id int32) {
	job := &r.w.jobs[id]
	m, res, p := r.m, &r.res, &r.pend
	leave := r.now + job.lifetime
	var rails uint64
	consistent, oneUnit := true, true
	for i, n := range p.node {
		node, gpus, devs := int(n), p.gpus[i], p.podDevs(i)
		r.hold(node, gpus, devs, leave)
		res.PodsPlaced++
		res.DevicesHeld += len(devs)
		res.DevicesIdle += m.idleDevices(gpus, devs)
		podBW := 0.0
		for g := range m.gpus {
			if gpus&(1<<g) == 0 {
				continue
			}
			best := m.bestClass(g, devs)
			r.classes[best]++
			res.GPUs++
			if best.GPUDirect() {
				res.GDRGPUs++
			}
			bw := r.cfg.Bandwidth[best]
			r.bwSum += bw
			podBW += bw
		}
		r.bwHist[roundTo(podBW/float64(job.gpus), 0.5)]++
		set := m.rails.ofDevices(m.devPF, devs)
		if i == 0 {
			rails = set
		}
		consistent = consistent && set == rails
		oneUnit = oneUnit && r.unit(node) == r.unit(int(p.node[0]))
	}
	if job.pods > 1 {
		r.jobs.place(consistent, consistent && oneUnit, r.now-job.arrive, int(job.pods*job.gpus))
		if r.cfg.trace != nil {
			r.trace(job, consistent, consistent && oneUnit)
		}
	}
	p.reset()
}

// unit is the scalable unit of node.
func (r *runner) unit(node int) int { return r.units.Unit(node) }

// units is the simulated fabric's layout: rail-optimized scalable units
// of SUNodes nodes, numbered as package fabric numbers a generated
// cluster's (the same layout its tests judge).
func (c *Config) units() fabric.Layout {
	return fabric.Layout{Design: fabric.RailOptimized, Nodes: c.Nodes, UnitNodes: c.SUNodes}
}

// departUntil ends every pod that leaves by t; after each departure time
// the jobs waiting for one rail set try again (only then can they fit).
func (r *runner) departUntil(t float64) error {
	for len(r.queue) > 0 && r.queue[0].at <= t {
		at, freed := r.queue[0].at, 0
		for len(r.queue) > 0 && r.queue[0].at == at {
			node := r.release(r.queue.pop().slot)
			freed = max(freed, bits.OnesCount64(r.c.freeGPU[node]))
		}
		if len(r.waiting) > 0 {
			r.now = at
			if err := r.retry(freed); err != nil {
				return err
			}
		}
	}
	return nil
}

// retry places the waiting jobs that fit now, first come first served,
// after rejecting those that waited past Config.MaxWait. A job that did
// not fit before can fit only on a node that just freed GPUs, so one
// whose pods are larger than any such node's free GPUs is not tried.
func (r *runner) retry(freed int) error {
	if r.p.Job == AdmissionRailSet {
		return r.retryAdmitted(freed)
	}
	r.giveUp(r.now)
	kept := r.waiting[:0]
	for _, id := range r.waiting {
		if int(r.w.jobs[id].gpus) > freed {
			kept = append(kept, id)
			continue
		}
		ok, err := r.placeRails(id)
		if err != nil {
			return err
		}
		if ok {
			r.commit(id)
			continue
		}
		kept = append(kept, id)
	}
	r.waiting = kept
	return nil
}

// giveUp rejects the waiting jobs that arrived more than Config.MaxWait
// before now; they held their GPUs' worth of demand idle all that time.
// A job of AdmissionRailSet gives back the pods it had started.
func (r *runner) giveUp(now float64) {
	r.waiting = slices.DeleteFunc(r.waiting, func(id int32) bool {
		job := &r.w.jobs[id]
		if now-job.arrive <= r.cfg.MaxWait {
			return false
		}
		r.dropAdmitted(id)
		r.reject(job, RejectRails)
		r.jobs.gaveUp++
		r.jobs.waitGPUTime += r.cfg.MaxWait * float64(job.pods*job.gpus)
		return true
	})
}
