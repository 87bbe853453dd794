package sim

import (
	"context"
	"math/rand/v2"
)

// jobSpec is one job of the workload, the same for every policy: pods
// pods of gpus GPUs and devices NIC devices each, arriving and living
// together. A single pod is a job of one pod.
type jobSpec struct {
	arrive   float64 // in units of the mean pod lifetime
	lifetime float64 // how long the job runs once placed
	// first is the index of the job's first pod among all the workload's
	// pods (its others follow): where its pods' coin tosses are.
	first               int32
	pods, gpus, devices int32
}

// workload is the jobs, and for every pod whether kubelet allocated its
// GPUs before its NIC devices (the coin toss of its map order).
type workload struct {
	jobs      []jobSpec
	gpusKnown []bool // by pod
}

// newWorkload draws jobs until cfg.Pods pods have arrived (the last job
// may bring a few more): Poisson arrivals at the rate that offers
// cfg.Load of the cluster's GPUs, exponential lifetimes of mean 1, shapes
// from cfg.Mix. A mix of single pods draws exactly what the simulator
// drew before jobs (the same pods for the same seed).
func newWorkload(ctx context.Context, cfg Config, gpusPerNode int) (workload, error) {
	r := rand.New(rand.NewPCG(cfg.Seed, 0x5eed_0f_a11))
	total, mean, meanPods := 0.0, 0.0, 0.0
	for _, m := range cfg.Mix {
		total += m.Weight
	}
	for _, m := range cfg.Mix {
		mean += float64(m.PodCount()*m.GPUs) * m.Weight / total
		meanPods += float64(m.PodCount()) * m.Weight / total
	}
	rate := cfg.Load * float64(cfg.Nodes*gpusPerNode) / mean
	w := workload{
		jobs:      make([]jobSpec, 0, int(float64(cfg.Pods)/meanPods)+1),
		gpusKnown: make([]bool, 0, cfg.Pods),
	}
	now := 0.0
	done := ctx.Done()
	for len(w.gpusKnown) < cfg.Pods {
		// Drawing millions of pods takes seconds under the race detector
		// on a busy machine: Ctrl-C must not wait for it.
		if len(w.jobs)%4096 == 0 {
			select {
			case <-done:
				return workload{}, ctx.Err()
			default:
			}
		}
		now += r.ExpFloat64() / rate
		x := r.Float64() * total
		shape := cfg.Mix[len(cfg.Mix)-1]
		for _, m := range cfg.Mix {
			if x < m.Weight {
				shape = m
				break
			}
			x -= m.Weight
		}
		d := shape.GPUs
		if cfg.Devices == PerPod {
			d = 1
		}
		j := jobSpec{
			arrive:   now,
			lifetime: r.ExpFloat64(),
			first:    int32(len(w.gpusKnown)),
			pods:     int32(shape.PodCount()),
			gpus:     int32(shape.GPUs),
			devices:  int32(d),
		}
		for range j.pods {
			w.gpusKnown = append(w.gpusKnown, r.Float64() < *cfg.GPUsKnown)
		}
		w.jobs = append(w.jobs, j)
	}
	return w, nil
}
