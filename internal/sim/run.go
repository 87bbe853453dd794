package sim

import (
	"container/heap"
	"context"
	"fmt"
	"math/bits"
	"slices"
	"sync"
	"time"

	"github.com/railyard-io/railyard/internal/alloc"
	"github.com/railyard-io/railyard/internal/topology"
)

// Rejection reasons.
const (
	RejectNoNode   = "no node with enough free GPUs and devices"
	RejectTopology = "topology affinity (restricted or single-numa-node)"
	RejectPolicy   = "policy error"
)

// Run simulates cfg once per policy, policies in parallel, and returns the
// results in the order of cfg.Policies.
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
				res.Policies[i], errs[i] = runPolicy(ctx, &cfg, m, pods, cfg.Policies[i])
			}
		}()
	}
	for i := range cfg.Policies {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("sim: policy %s: %w", cfg.Policies[i].Name(), err)
		}
	}
	for _, p := range res.Policies {
		res.Events = max(res.Events, p.Events)
	}
	res.Elapsed = time.Since(start)
	return res, nil
}

// departure is a placed pod's end.
type departure struct {
	at  float64
	pod int
}

type departures []departure

func (h departures) Len() int           { return len(h) }
func (h departures) Less(i, j int) bool { return h[i].at < h[j].at }
func (h departures) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *departures) Push(x any)        { *h = append(*h, x.(departure)) }
func (h *departures) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// placed is what a running pod holds.
type placed struct {
	node int
	gpus uint64
	devs []int32
}

// runPolicy replays the workload with one NIC policy.
func runPolicy(ctx context.Context, cfg *Config, m *machine, pods []podSpec, p alloc.Policy) (PolicyResult, error) {
	c := newCluster(m, cfg)
	res := PolicyResult{Name: p.Name(), Rejections: map[string]int{}}
	var classes [int(topology.SYS) + 1]int
	bwHist := map[float64]int{}
	var bwSum float64
	var strandedSamples float64
	lat := make([]time.Duration, 0, len(pods))
	running := make([]placed, len(pods))
	var queue departures
	availBuf := make([]string, 0, len(m.devs))
	mustBuf := make([]string, 0, len(m.devs))
	var gpuBuf []string
	nd := len(m.devs)

	release := func(id int) {
		pl := running[id]
		c.releaseDevices(pl.node, pl.devs)
		c.setFreeGPUs(pl.node, c.freeGPU[pl.node]|pl.gpus)
		c.updateStranded(pl.node)
		res.Events++
	}

	for id, pod := range pods {
		if id%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return res, err
			}
		}
		for len(queue) > 0 && queue[0].at <= pod.arrive {
			release(heap.Pop(&queue).(departure).pod)
		}
		res.Events++
		strandedSamples += float64(c.strandedSum)

		node := c.schedule(pod.gpus, pod.devices)
		if node < 0 {
			res.Rejections[RejectNoNode]++
			continue
		}
		// Kubelet admission: the Topology Manager's NUMA hint.
		tmOn := cfg.TopologyPolicy != TMNone && len(c.masks) > 0
		var cand uint64
		var mask uint64
		if tmOn {
			hint, preferred, ok := c.numaHint(node, pod.gpus, pod.devices)
			width := bits.OnesCount64(hint)
			if !ok || (cfg.TopologyPolicy == TMSingleNUMA && (!preferred || width > 1)) ||
				(cfg.TopologyPolicy == TMRestricted && (!preferred || width > c.minWidth(pod.gpus, pod.devices))) {
				res.Rejections[RejectTopology]++
				continue
			}
			mask, cand = hint, c.gpusIn(hint)
		} else {
			cand = c.narrowestGPUSet(node, pod.gpus)
		}
		gpus := c.chooseGPUs(node, pod.gpus, cand)

		// The NIC devices: kubelet's device manager narrows the offer to
		// the NUMA-aligned devices when they are more than needed, and
		// otherwise takes every aligned device and asks for the rest.
		avail, must := availBuf[:0], mustBuf[:0]
		for d := 0; d < nd; d++ {
			if !c.devFree[node*nd+d] {
				continue
			}
			if tmOn && mask&(1<<m.devNUMA[d]) != 0 {
				must = append(must, m.devs[d])
			}
			avail = append(avail, m.devs[d])
		}
		if tmOn && pod.devices < len(must) {
			avail, must = must, must[:0]
		}
		gpuBuf = gpuBuf[:0]
		if pod.gpusKnown {
			for g := range m.gpus {
				if gpus&(1<<g) != 0 {
					gpuBuf = append(gpuBuf, m.gpus[g])
				}
			}
		}
		req := alloc.Request{Topology: m.topo, Available: avail, MustInclude: must, Size: pod.devices, GPUs: gpuBuf}
		t0 := time.Now()
		out, err := p.Allocate(req)
		lat = append(lat, time.Since(t0))
		if err != nil {
			res.Rejections[RejectPolicy]++
			continue
		}
		devs, err := checkAnswer(m, c, node, req, out.Devices)
		if err != nil {
			return res, err
		}

		c.setFreeGPUs(node, c.freeGPU[node]&^gpus)
		c.takeDevices(node, devs)
		c.updateStranded(node)
		running[id] = placed{node: node, gpus: gpus, devs: devs}
		heap.Push(&queue, departure{at: pod.leave, pod: id})
		res.PodsPlaced++

		podBW := 0.0
		for g := range m.gpus {
			if gpus&(1<<g) == 0 {
				continue
			}
			best := topology.ClassUnknown
			for _, d := range devs {
				cl := m.class[g][m.devPF[d]]
				if best == topology.ClassUnknown || cl.Rank() < best.Rank() {
					best = cl
				}
			}
			classes[best]++
			res.GPUs++
			if best.GPUDirect() {
				res.GDRGPUs++
			}
			bw := cfg.Bandwidth[best]
			bwSum += bw
			podBW += bw
		}
		bwHist[roundTo(podBW/float64(pod.gpus), 0.5)]++
	}
	for len(queue) > 0 {
		release(heap.Pop(&queue).(departure).pod)
	}
	if err := c.checkEmpty(); err != nil {
		return res, err
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
		res.StrandedFraction = res.StrandedMean / float64(cfg.Nodes*nd)
	}
	slices.Sort(lat)
	res.AllocP50us = micros(percentile(lat, 0.50))
	res.AllocP99us = micros(percentile(lat, 0.99))
	if len(lat) > 0 {
		res.AllocMaxus = micros(lat[len(lat)-1])
	}
	return res, nil
}

// checkAnswer verifies a policy's answer against kubelet's contract and the
// node's free devices, and maps it to device indexes.
func checkAnswer(m *machine, c *cluster, node int, req alloc.Request, answer []string) ([]int32, error) {
	if len(answer) != req.Size {
		return nil, fmt.Errorf("answered %d devices for a request of %d", len(answer), req.Size)
	}
	nd := len(m.devs)
	devs := make([]int32, 0, len(answer))
	for _, a := range answer {
		d, ok := m.devIdx[a]
		if !ok || !c.devFree[node*nd+int(d)] || slices.Contains(devs, d) {
			return nil, fmt.Errorf("answered device %q that is unknown, busy or repeated", a)
		}
		devs = append(devs, d)
	}
	for _, a := range req.MustInclude {
		if !slices.Contains(answer, a) {
			return nil, fmt.Errorf("answer %v lacks must-include device %s", answer, a)
		}
	}
	return devs, nil
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
