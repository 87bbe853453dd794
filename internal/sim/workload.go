package sim

import (
	"math/rand/v2"
)

// podSpec is one pod of the workload, the same for every policy.
type podSpec struct {
	arrive, leave float64 // in units of the mean pod lifetime
	gpus, devices int32
	// gpusKnown: kubelet allocated the pod's GPUs before its NIC devices
	// (the coin toss of its map order).
	gpusKnown bool
}

// workload draws cfg.Pods pods: Poisson arrivals at the rate that offers
// cfg.Load of the cluster's GPUs, exponential lifetimes of mean 1, shapes
// from cfg.Mix.
func workload(cfg Config, gpusPerNode int) []podSpec {
	r := rand.New(rand.NewPCG(cfg.Seed, 0x5eed_0f_a11))
	total, mean := 0.0, 0.0
	for _, m := range cfg.Mix {
		total += m.Weight
	}
	for _, m := range cfg.Mix {
		mean += float64(m.GPUs) * m.Weight / total
	}
	rate := cfg.Load * float64(cfg.Nodes*gpusPerNode) / mean
	pods := make([]podSpec, cfg.Pods)
	now := 0.0
	for i := range pods {
		now += r.ExpFloat64() / rate
		x := r.Float64() * total
		g := cfg.Mix[len(cfg.Mix)-1].GPUs
		for _, m := range cfg.Mix {
			if x < m.Weight {
				g = m.GPUs
				break
			}
			x -= m.Weight
		}
		d := g
		if cfg.Devices == PerPod {
			d = 1
		}
		pods[i] = podSpec{
			arrive:    now,
			leave:     now + r.ExpFloat64(),
			gpus:      int32(g),
			devices:   int32(d),
			gpusKnown: r.Float64() < *cfg.GPUsKnown,
		}
	}
	return pods
}
