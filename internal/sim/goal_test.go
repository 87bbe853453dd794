package sim

import (
	"context"
	"fmt"
	"testing"

	"github.com/railyard-io/railyard/machines"
)

// TestGPUAwareReachesOptimal holds gpu-aware to the goal on every built-in
// machine, workload mix and device mode: at least 99% of optimal's
// GPUDirect fraction. It also logs the gains over the kubelet and numa
// baselines (the numbers behind BENCHMARKS.md).
func TestGPUAwareReachesOptimal(t *testing.T) {
	nodes, pods := 40, 4000
	if raceEnabled || testing.Short() {
		nodes, pods = 10, 600
	}
	for _, name := range machines.Names() {
		topo := builtin(t, name)
		for _, mix := range MixNames() {
			for _, mode := range []DeviceMode{PerGPU, PerPod} {
				t.Run(fmt.Sprintf("%s/%s/%s", name, mix, mode), func(t *testing.T) {
					m, err := ParseMix(mix)
					if err != nil {
						t.Fatal(err)
					}
					res, err := Run(context.Background(), Config{Topology: topo, Machine: name, Nodes: nodes, Pods: pods, Seed: 42, Mix: m, Devices: mode})
					if err != nil {
						t.Fatal(err)
					}
					ga, _ := res.Policy("gpu-aware")
					opt, _ := res.Policy("optimal")
					kub, _ := res.Policy("kubelet")
					numa, _ := res.Policy("numa")
					if opt.GPUs == 0 {
						// Whole-PF pools too small for the mix reject every pod alike.
						for _, p := range res.Policies {
							if p.GPUs != 0 {
								t.Fatalf("optimal placed no GPU but %s placed %d", p.Name, p.GPUs)
							}
						}
						t.Logf("no pod fits (%d devices per node)", res.Config.DevicesPerNode)
						return
					}
					if ga.GDRFraction < 0.99*opt.GDRFraction {
						t.Errorf("gpu-aware GPUDirect fraction %.4f < 99%% of optimal's %.4f", ga.GDRFraction, opt.GDRFraction)
					}
					t.Logf("gdr: gpu-aware %.3f optimal %.3f kubelet %.3f numa %.3f | gain x%s vs kubelet, x%s vs numa | GB/s %.2f vs %.2f / %.2f",
						ga.GDRFraction, opt.GDRFraction, kub.GDRFraction, numa.GDRFraction,
						ratio(ga.GDRFraction, kub.GDRFraction), ratio(ga.GDRFraction, numa.GDRFraction),
						ga.MeanGbps, kub.MeanGbps, numa.MeanGbps)
				})
			}
		}
	}
}

func ratio(a, b float64) string {
	if b == 0 {
		if a == 0 {
			return "1 (both 0)"
		}
		return "inf"
	}
	return fmt.Sprintf("%.2f", a/b)
}
