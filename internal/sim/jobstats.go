package sim

import (
	"math/bits"
	"slices"
)

// jobStats counts what the jobs of several pods got.
type jobStats struct {
	arrived, placed, rejected, gaveUp int
	consistent, oneLeaf, waited       int
	waits                             []float64
	waitGPUTime                       float64
	// AdmissionRailSet: re-choices, jobs placed or given up after some
	// of their pods started, and the GPU time those pods held idle.
	rechosen, partlyStarted int
	heldIdleGPUTime         float64
}

// place counts a placed job that waited wait for gpus GPUs.
func (s *jobStats) place(consistent, oneLeaf bool, wait float64, gpus int) {
	s.placed++
	if consistent {
		s.consistent++
	}
	if oneLeaf {
		s.oneLeaf++
	}
	if wait > 0 {
		s.waited++
		s.waitGPUTime += wait * float64(gpus)
	}
	s.waits = append(s.waits, wait)
}

// result sums up over horizon (the simulated time) on a cluster of
// clusterGPUs GPUs.
func (s *jobStats) result(horizon float64, clusterGPUs int) *MultiPodResult {
	out := &MultiPodResult{Jobs: s.arrived, Placed: s.placed, Rejected: s.rejected, GaveUp: s.gaveUp,
		Rechosen: s.rechosen, PartlyStarted: s.partlyStarted}
	if s.placed > 0 {
		n := float64(s.placed)
		out.RailConsistent = float64(s.consistent) / n
		out.OneLeafLayer = float64(s.oneLeaf) / n
		out.Waited = float64(s.waited) / n
		sum := 0.0
		for _, w := range s.waits {
			sum += w
		}
		out.WaitMean = sum / n
		slices.Sort(s.waits)
		out.WaitP99 = s.waits[min(len(s.waits)-1, int(0.99*n))]
		out.WaitMax = s.waits[len(s.waits)-1]
	}
	if horizon > 0 {
		out.RailStrandedGPUs = s.waitGPUTime / horizon
		out.RailStrandedFraction = out.RailStrandedGPUs / float64(clusterGPUs)
		out.HeldIdleGPUs = s.heldIdleGPUTime / horizon
	}
	return out
}

// jobTrace is one placed job of several pods as a test sees it: each
// pod's node and devices, and what the simulator counted.
type jobTrace struct {
	Policy              string
	Nodes               []int
	Devices             [][]string
	Consistent, OneLeaf bool
	Arrive, Start       float64
	GPUs                [][]string
}

// trace hands a placed job to Config.trace.
func (r *runner) trace(job *jobSpec, consistent, oneLeaf bool) {
	p := &r.pend
	t := jobTrace{Policy: r.p.Name, Consistent: consistent, OneLeaf: oneLeaf, Arrive: job.arrive, Start: r.now}
	for i, node := range p.node {
		t.Nodes = append(t.Nodes, int(node))
		var devs, gpus []string
		for _, d := range p.podDevs(i) {
			devs = append(devs, r.m.devs[d])
		}
		for g := p.gpus[i]; g != 0; g &= g - 1 {
			gpus = append(gpus, r.m.gpus[bits.TrailingZeros64(g)])
		}
		t.Devices, t.GPUs = append(t.Devices, devs), append(t.GPUs, gpus)
	}
	r.cfg.trace(t)
}
