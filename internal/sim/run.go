package sim

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/railyard-io/railyard/internal/fabric"
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
	wl, err := newWorkload(ctx, cfg, len(m.gpus))
	if err != nil {
		return nil, fmt.Errorf("sim: drawing the workload: %w", err)
	}
	if cfg.Devices == AllPFs {
		wl.devicesOnEveryPF(m.railPFs())
	}
	res := &Result{
		Machine:  cfg.Machine,
		Nodes:    cfg.Nodes,
		Pods:     len(wl.gpusKnown),
		Jobs:     len(wl.jobs),
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
				res.Policies[i], errs[i] = newRunner(&cfg, m, cfg.Policies[i]).run(ctx, &wl)
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
	w   *workload
	now float64

	// What running pods hold, by slot: a pointer-free store (the garbage
	// collector never scans it) reused as pods leave.
	slotNode  []int32
	slotGPUs  []uint64
	slotDevs  []int32 // slot*maxDev ...
	slotCount []int32
	freeSlots []int32
	maxDev    int
	queue     departures

	// The pods of the job being placed, until it is placed whole or
	// given back (pending, jobs.go); jobs waiting for one rail set.
	pend    pending
	waiting []int32
	jobs    jobStats
	// Scratch of OneRailSet (jobrails.go): rail sets tried, the stock GPU
	// choice by free GPUs, nodes found, nodes found per scalable unit.
	tried   []uint64
	byRoom  []roomOf
	across  acrossUnits
	stock   map[stockKey]uint64
	found   []int32
	perUnit []int32
	touched []int
	// AdmissionRailSet (admission.go): the waiting jobs' sets and started
	// pods, the candidate sets by pod shape, which fit a free-GPU set,
	// and room by candidate.
	admitted   map[int32]*admitted
	candidates map[fitKey][]uint64
	fitting    map[fitKey][]int16
	roomBy     []int
	gaveBack   bool
	// units says which scalable unit a node is in (Config.SUNodes), as
	// package fabric numbers a rail-optimized cluster's units.
	units fabric.Layout

	ask asker
	// Scratch bitsets over a node's devices.
	offerAvail, offerMust, cand, chosenSet []uint64
	chosen                                 []int32
	tokens, poolCount                      []int

	// What placed pods got.
	classes   [int(topology.SYS) + 1]int
	bwHist    map[float64]int
	bwSum     float64
	timeEvery int
	lat       []time.Duration
}

func newRunner(cfg *Config, m *machine, p Policy) *runner {
	w := m.words
	r := &runner{
		cfg: cfg, m: m, c: newCluster(m, cfg), p: p, units: cfg.units(),
		res:        PolicyResult{Name: p.Name, Binding: p.Binding, Job: p.Job, Rejections: map[string]int{}},
		ask:        newAsker(m, p, !cfg.AskEveryPod),
		offerAvail: make([]uint64, w), offerMust: make([]uint64, w), cand: make([]uint64, w), chosenSet: make([]uint64, w),
		tokens: make([]int, m.numas()), poolCount: make([]int, m.numas()),
		bwHist: map[float64]int{},
	}
	if p.Job.OneSet() {
		r.c.byMask = newMaskIndex(r.c.freeGPU, cfg.Scheduler)
		r.stock = map[stockKey]uint64{}
		r.perUnit = make([]int32, r.units.Units())
	}
	if p.Job == AdmissionRailSet {
		r.admitted, r.candidates, r.fitting = map[int32]*admitted{}, map[fitKey][]uint64{}, map[fitKey][]int16{}
	}
	return r
}

func (r *runner) run(ctx context.Context, w *workload) (PolicyResult, error) {
	start := time.Now()
	m, c, res := r.m, r.c, &r.res
	r.w = w
	r.maxDev = 1
	for _, j := range w.jobs {
		r.maxDev = max(r.maxDev, min(int(j.devices), len(m.devs)))
	}
	var strandedSamples float64
	// Decision times are sampled on every timeEvery-th pod (at least
	// 16,384 samples, or every pod): sampled pods are asked even what the
	// policy answered before, so the sample is unbiased.
	pods := len(w.gpusKnown)
	r.timeEvery = max(1, pods/16384)
	if r.cfg.timeEvery > 0 {
		r.timeEvery = r.cfg.timeEvery
	}
	r.lat = make([]time.Duration, 0, pods/r.timeEvery+1)

	done := ctx.Done()
	for id := range w.jobs {
		job := &w.jobs[id]
		// Every job (a channel poll, a few ns): an uncached decision of
		// the exact policy can take a millisecond, ten times that under
		// the race detector on a busy machine, and Ctrl-C must end the
		// run well within the CLI's grace period. Checking every 64 jobs
		// took over 3 s there (TestSIGTERMStopsASimulationPromptly).
		select {
		case <-done:
			return *res, ctx.Err()
		default:
		}
		if err := r.departUntil(job.arrive); err != nil {
			return *res, err
		}
		r.now = job.arrive
		res.Events += int(job.pods)
		strandedSamples += float64(c.strandedSum)
		if err := r.arrive(int32(id)); err != nil {
			return *res, err
		}
	}
	if err := r.departUntil(math.Inf(1)); err != nil {
		return *res, err
	}
	r.giveUp(math.Inf(1)) // jobs still waiting once every pod left
	if err := c.checkEmpty(); err != nil {
		return *res, err
	}

	for _, n := range res.Rejections {
		res.Rejected += n
	}
	if res.GPUs > 0 {
		res.GDRFraction = float64(res.GDRGPUs) / float64(res.GPUs)
		res.MeanGbps = r.bwSum / float64(res.GPUs)
	}
	res.Classes = map[string]int{}
	for cl, n := range r.classes {
		if n > 0 {
			res.Classes[topology.Class(cl).String()] = n
		}
	}
	for v, n := range r.bwHist {
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
	if len(w.jobs) > 0 {
		res.StrandedMean = strandedSamples / float64(len(w.jobs))
		res.StrandedFraction = res.StrandedMean / float64(r.cfg.Nodes*len(m.devs))
	}
	if multiPod(r.cfg.Mix) {
		horizon := 0.0
		if len(w.jobs) > 0 {
			horizon = w.jobs[len(w.jobs)-1].arrive
		}
		res.MultiPod = r.jobs.result(horizon, r.cfg.Nodes*len(m.gpus))
	}
	slices.Sort(r.lat)
	res.AllocP50us = micros(percentile(r.lat, 0.50))
	res.AllocP99us = micros(percentile(r.lat, 0.99))
	if len(r.lat) > 0 {
		res.AllocMaxus = micros(r.lat[len(r.lat)-1])
	}
	res.PolicyCalls, res.TimedPods = r.ask.calls, len(r.lat)
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

// release frees what the pod in slot s held and returns its node.
func (r *runner) release(s int32) int {
	node := int(r.slotNode[s])
	at := int(s) * r.maxDev
	r.c.releaseDevices(node, r.slotDevs[at:at+int(r.slotCount[s])])
	r.c.setFreeGPUs(node, r.c.freeGPU[node]|r.slotGPUs[s])
	r.c.updateStranded(node)
	r.freeSlots = append(r.freeSlots, s)
	r.res.Events++
	return node
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
