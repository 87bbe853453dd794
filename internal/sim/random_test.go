package sim

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/railyard-io/railyard/machines"
)

// TestRandomConfigs runs small simulations with random settings on random
// built-in machines. Run itself checks every policy answer against the
// contract and the node's free devices, and that the cluster is empty once
// every pod has left; here we also check that the counts add up, and that
// remembering pure policies' answers changes no result (each config runs
// again with AskEveryPod).
func TestRandomConfigs(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	n := 40
	if testing.Short() || raceEnabled {
		n = 12
	}
	remembered := 0 // calls the memo saved, over all configs
	defer func() {
		if remembered == 0 {
			t.Error("the memo never answered: the comparison tested nothing")
		}
	}()
	for i := 0; i < n; i++ {
		cfg := randomConfig(t, r)
		cfg.timeEvery = 1 + r.IntN(20) // pods not timed use the memo
		t.Run(fmt.Sprintf("%d-%s", i, cfg.Machine), func(t *testing.T) {
			res, err := Run(context.Background(), cfg)
			if err != nil {
				t.Fatalf("%+v: %v", cfg, err)
			}
			every := cfg
			every.AskEveryPod = true
			asked, err := Run(context.Background(), every)
			if err != nil {
				t.Fatalf("%+v: %v", every, err)
			}
			for j, a := range res.Policies {
				b := asked.Policies[j]
				if a.GDRGPUs != b.GDRGPUs || a.GPUs != b.GPUs || a.Rejected != b.Rejected || a.StrandedMean != b.StrandedMean ||
					fmt.Sprint(a.Classes, a.PodBandwidth) != fmt.Sprint(b.Classes, b.PodBandwidth) || a.PolicyCalls > b.PolicyCalls {
					t.Errorf("%s: the memo changed the result:\n%+v\n%+v", a.Name, a, b)
				}
				remembered += b.PolicyCalls - a.PolicyCalls
			}
			for _, p := range res.Policies {
				sum := 0
				for _, n := range p.Classes {
					sum += n
				}
				if sum != p.GPUs || p.GDRGPUs > p.GPUs || p.PodsPlaced+p.Rejected != cfg.Pods {
					t.Errorf("%s: classes sum %d, GPUs %d, GDR %d, placed %d + rejected %d != %d pods",
						p.Name, sum, p.GPUs, p.GDRGPUs, p.PodsPlaced, p.Rejected, cfg.Pods)
				}
				if p.Events != cfg.Pods+p.PodsPlaced {
					t.Errorf("%s: %d events for %d arrivals and %d departures", p.Name, p.Events, cfg.Pods, p.PodsPlaced)
				}
			}
		})
	}
}

// randomConfig draws a small simulation: a random built-in machine, mix,
// device mode, load, Topology Manager policy, scheduler, share of GPUs
// known and number of workers.
func randomConfig(t *testing.T, r *rand.Rand) Config {
	names := machines.Names()
	name := names[r.IntN(len(names))]
	var mix []MixEntry
	for _, g := range []int{1, 2, 3, 4, 6, 8} {
		if r.IntN(2) == 0 {
			mix = append(mix, MixEntry{GPUs: g, Weight: float64(1 + r.IntN(4))})
		}
	}
	if mix == nil {
		mix = []MixEntry{{GPUs: 1, Weight: 1}}
	}
	known := r.Float64()
	return Config{
		Topology: builtin(t, name), Machine: name,
		Nodes: 1 + r.IntN(12), Pods: r.IntN(600), Seed: r.Uint64(), Mix: mix,
		Devices:        []DeviceMode{PerGPU, PerPod}[r.IntN(2)],
		Load:           0.2 + 1.3*r.Float64(),
		TopologyPolicy: []TopologyPolicy{TMNone, TMBestEffort, TMRestricted, TMSingleNUMA}[r.IntN(4)],
		Scheduler:      []Scheduler{MostAllocated, LeastAllocated}[r.IntN(2)],
		GPUsKnown:      &known,
		Workers:        1 + r.IntN(3),
	}
}
