package sim

import (
	"context"
	"testing"
)

// BenchmarkSimulate1000Nodes100kPods is the scale goal as a benchmark: one
// op is a whole simulation of 1,000 DGX H100 nodes and 100,000 pod arrivals
// with every default policy (goal: < 30 s per op on 2 cores).
func BenchmarkSimulate1000Nodes100kPods(b *testing.B) {
	topo, err := machineTopologies()
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		res, err := Run(context.Background(), Config{Topology: topo["dgx-h100"], Nodes: 1000, Pods: 100_000, Seed: 1})
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(res.Events), "events/policy")
	}
}
