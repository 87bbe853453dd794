package sim

import (
	"context"
	"fmt"
	"math/bits"
	"slices"
	"sync"
	"time"

	"github.com/railyard-io/railyard/internal/topology"
)

// Rejection reasons.
const (
	RejectNoNode   = "no node with enough free GPUs and devices"
	RejectTopology = "topology affinity (restricted or single-numa-node)"
	RejectPolicy   = "policy error"
)

// Run simulates cfg once per policy, policies in parallel (each on its own
// copy of the cluster, so the results do not depend on the workers), and
// returns the results in the order of cfg.Policies.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	start := time.Now()
	m := newMachine(cfg.Topology)
	pods := workload(cfg, len(m.gpus))
	res := &Result{
		Machine:  cfg.Machine,
		Nodes:    cfg.Nodes,
		Pods:     cfg.Pods,
		Config:   describe(cfg, m),
		Policies: make([]PolicyResult, len(cfg.Policies)),
	}
	errs := make([]error, len(cfg.Policies))
	jobs := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < min(cfg.Workers, len(cfg.Policies)); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				res.Policies[i], errs[i] = newRunner(&cfg, m, cfg.Policies[i]).run(ctx, pods)
			}
		}()
	}
	// Policies that are not pure first: every pod asks them (no memo), so
	// they take longest, and starting them first keeps every worker busy
	// to the end. Which worker runs a policy changes none of its results.
	for _, pure := range [2]bool{false, true} {
		for i, p := range cfg.Policies {
			if p.Pure == pure {
				jobs <- i
			}
		}
	}
	close(jobs)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("sim: policy %s: %w", cfg.Policies[i].Name, err)
		}
	}
	for _, p := range res.Policies {
		res.Events = max(res.Events, p.Events)
	}
	res.Elapsed = time.Since(start)
	return res, nil
}

// runner replays the workload with one policy.
type runner struct {
	cfg *Config
	m   *machine
	c   *cluster
	p   Policy
	res PolicyResult

	// What running pods hold, by slot: a pointer-free store (the garbage
	// collector never scans it) reused as pods leave.
	slotNode  []int32
	slotGPUs  []uint64
	slotDevs  []int32 // slot*maxDev ...
	slotCount []int32
	freeSlots []int32
	maxDev    int
	queue     departures

	ask asker
	// Scratch bitsets over a node's devices.
	offerAvail, offerMust, cand, chosenSet []uint64
	chosen                                 []int32
	tokens, poolCount                      []int
}

func newRunner(cfg *Config, m *machine, p Policy) *runner {
	w := m.words
	return &runner{
		cfg: cfg, m: m, c: newCluster(m, cfg), p: p,
		res:        PolicyResult{Name: p.Name, Binding: p.Binding, Rejections: map[string]int{}},
		ask:        newAsker(m, p, !cfg.AskEveryPod),
		offerAvail: make([]uint64, w), offerMust: make([]uint64, w), cand: make([]uint64, w), chosenSet: make([]uint64, w),
		tokens: make([]int, m.numas()), poolCount: make([]int, m.numas()),
	}
}

func (r *runner) run(ctx context.Context, pods []podSpec) (PolicyResult, error) {
	start := time.Now()
	m, c, res := r.m, r.c, &r.res
	r.maxDev = 1
	for _, p := range pods {
		r.maxDev = max(r.maxDev, min(int(p.devices), len(m.devs)))
	}
	var classes [int(topology.SYS) + 1]int
	bwHist := map[float64]int{}
	var bwSum, strandedSamples float64
	// Decision times are sampled on every timeEvery-th pod (at least
	// 16,384 samples, or every pod): sampled pods are asked even what the
	// policy answered before, so the sample is unbiased.
	timeEvery := max(1, len(pods)/16384)
	if r.cfg.timeEvery > 0 {
		timeEvery = r.cfg.timeEvery
	}
	lat := make([]time.Duration, 0, len(pods)/timeEvery+1)

	for id := range pods {
		pod := &pods[id]
		// Every 64 pods: an uncached decision of the exact policy can take
		// a millisecond on a busy machine, and Ctrl-C must end the run
		// well within the CLI's grace period.
		if id%64 == 0 {
			if err := ctx.Err(); err != nil {
				return *res, err
			}
		}
		for len(r.queue) > 0 && r.queue[0].at <= pod.arrive {
			r.release(r.queue.pop().slot)
		}
		res.Events++
		strandedSamples += float64(c.strandedSum)

		gpusWanted, size := int(pod.gpus), int(pod.devices)
		node := c.schedule(gpusWanted, size)
		if node < 0 {
			res.Rejections[RejectNoNode]++
			continue
		}
		// Kubelet admission: the Topology Manager's NUMA hint.
		tmOn := r.cfg.TopologyPolicy != TMNone && len(c.masks) > 0
		var cand, mask uint64
		if tmOn {
			hint, preferred, ok := c.numaHint(node, gpusWanted, size)
			width := bits.OnesCount64(hint)
			if !ok || (r.cfg.TopologyPolicy == TMSingleNUMA && (!preferred || width > 1)) ||
				(r.cfg.TopologyPolicy == TMRestricted && (!preferred || width > c.minWidth(gpusWanted, size))) {
				res.Rejections[RejectTopology]++
				continue
			}
			mask, cand = hint, c.gpusIn(hint)
		} else {
			cand = c.narrowestGPUSet(node, gpusWanted)
		}
		gpus := c.chooseGPUs(node, gpusWanted, cand)

		r.ask.elapsed, r.ask.timed = 0, id%timeEvery == 0
		devs, err := r.decide(node, pod, gpus, mask, tmOn)
		if r.ask.timed {
			lat = append(lat, r.ask.elapsed)
		}
		if err == errPolicy {
			res.Rejections[RejectPolicy]++
			continue
		}
		if err != nil {
			return *res, err
		}

		c.setFreeGPUs(node, c.freeGPU[node]&^gpus)
		c.takeDevices(node, devs)
		c.updateStranded(node)
		r.hold(node, gpus, devs, pod.leave)
		res.PodsPlaced++

		podBW := 0.0
		for g := range m.gpus {
			if gpus&(1<<g) == 0 {
				continue
			}
			best := m.bestClass(g, devs)
			classes[best]++
			res.GPUs++
			if best.GPUDirect() {
				res.GDRGPUs++
			}
			bw := r.cfg.Bandwidth[best]
			bwSum += bw
			podBW += bw
		}
		bwHist[roundTo(podBW/float64(gpusWanted), 0.5)]++
	}
	for len(r.queue) > 0 {
		r.release(r.queue.pop().slot)
	}
	if err := c.checkEmpty(); err != nil {
		return *res, err
	}

	for _, n := range res.Rejections {
		res.Rejected += n
	}
	if res.GPUs > 0 {
		res.GDRFraction = float64(res.GDRGPUs) / float64(res.GPUs)
		res.MeanGbps = bwSum / float64(res.GPUs)
	}
	res.Classes = map[string]int{}
	for cl, n := range classes {
		if n > 0 {
			res.Classes[topology.Class(cl).String()] = n
		}
	}
	for v, n := range bwHist {
		res.PodBandwidth = append(res.PodBandwidth, HistBin{GBps: v, Pods: n})
	}
	slices.SortFunc(res.PodBandwidth, func(a, b HistBin) int {
		switch {
		case a.GBps < b.GBps:
			return -1
		case a.GBps > b.GBps:
			return 1
		}
		return 0
	})
	if len(pods) > 0 {
		res.StrandedMean = strandedSamples / float64(len(pods))
		res.StrandedFraction = res.StrandedMean / float64(r.cfg.Nodes*len(m.devs))
	}
	slices.Sort(lat)
	res.AllocP50us = micros(percentile(lat, 0.50))
	res.AllocP99us = micros(percentile(lat, 0.99))
	if len(lat) > 0 {
		res.AllocMaxus = micros(lat[len(lat)-1])
	}
	res.PolicyCalls, res.TimedPods = r.ask.calls, len(lat)
	res.Elapsed = time.Since(start)
	return *res, nil
}

// hold records a placed pod until it leaves.
func (r *runner) hold(node int, gpus uint64, devs []int32, leave float64) {
	var s int32
	if n := len(r.freeSlots); n > 0 {
		s, r.freeSlots = r.freeSlots[n-1], r.freeSlots[:n-1]
	} else {
		s = int32(len(r.slotNode))
		r.slotNode = append(r.slotNode, 0)
		r.slotGPUs = append(r.slotGPUs, 0)
		r.slotCount = append(r.slotCount, 0)
		r.slotDevs = append(r.slotDevs, make([]int32, r.maxDev)...)
	}
	r.slotNode[s], r.slotGPUs[s], r.slotCount[s] = int32(node), gpus, int32(len(devs))
	copy(r.slotDevs[int(s)*r.maxDev:], devs)
	r.queue.push(departure{at: leave, slot: s})
}

// release frees what the pod in slot s held.
func (r *runner) release(s int32) {
	node := int(r.slotNode[s])
	at := int(s) * r.maxDev
	r.c.releaseDevices(node, r.slotDevs[at:at+int(r.slotCount[s])])
	r.c.setFreeGPUs(node, r.c.freeGPU[node]|r.slotGPUs[s])
	r.c.updateStranded(node)
	r.freeSlots = append(r.freeSlots, s)
	r.res.Events++
}

// departure is a placed pod's end.
type departure struct {
	at   float64
	slot int32
}

// departures is a 4-ary min-heap by time (typed: no boxing per event;
// half the depth of a binary heap, so fewer unpredictable branches).
type departures []departure

func (h *departures) push(d departure) {
	q := append(*h, d)
	i := len(q) - 1
	for i > 0 {
		p := (i - 1) / 4
		if q[p].at <= d.at {
			break
		}
		q[i] = q[p]
		i = p
	}
	q[i] = d
	*h = q
}

func (h *departures) pop() departure {
	q := *h
	top := q[0]
	n := len(q) - 1
	last := q[n]
	q = q[:n]
	i := 0
	for {
		c := 4*i + 1
		if c >= n {
			break
		}
		small := c
		for j := c + 1; j < min(c+4, n); j++ {
			if q[j].at < q[small].at {
				small = j
			}
		}
		if q[small].at >= last.at {
			break
		}
		q[i] = q[small]
		i = small
	}
	if n > 0 {
		q[i] = last
	}
	*h = q
	return top
}

func roundTo(v, step float64) float64 {
	return float64(int64(v/step+0.5)) * step
}

func percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, int(q*float64(len(sorted))))]
}

func micros(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }
