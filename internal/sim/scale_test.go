//go:build !race

package sim

import (
	"context"
	"testing"
	"time"
)

// TestScaleGoal holds the simulator to its goal: 1,000 nodes and 100,000
// pod arrivals (about 200,000 events) with every default policy in under 30 s.
// Skipped with -short and under the race detector.
func TestScaleGoal(t *testing.T) {
	if testing.Short() {
		t.Skip("takes seconds")
	}
	start := time.Now()
	res, err := Run(context.Background(), Config{Topology: builtin(t, "dgx-h100"), Machine: "dgx-h100", Nodes: 1000, Pods: 100_000, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	t.Logf("1000 nodes, %d pods, %d events per policy, %d policies: %v", res.Pods, res.Events, len(res.Policies), took)
	for _, p := range res.Policies {
		t.Logf("%-10s gdr %.3f bw %.2f rej %d p99 %.1fus", p.Name, p.GDRFraction, p.MeanGbps, p.Rejected, p.AllocP99us)
	}
	if took > 30*time.Second {
		t.Errorf("took %v, goal < 30s", took)
	}
}
