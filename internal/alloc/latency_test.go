//go:build !race

package alloc

import (
	"testing"
	"time"
)

// TestDecisionLatencyP99 holds every policy to the goal: a decision for an
// 8-GPU pod on a node with 2048 free VFs takes under 1 ms at p99. (Skipped
// under the race detector, which slows everything several times.)
func TestDecisionLatencyP99(t *testing.T) {
	if testing.Short() {
		t.Skip("timing test")
	}
	topo := bigNode()
	req := bigRequest(topo)
	for _, p := range allPolicies(t) {
		d := decisionTimes(t, p, req, 2000)
		p50, p99 := percentile(d, 0.5), percentile(d, 0.99)
		t.Logf("%-10s p50 %v p99 %v", p.Name(), p50, p99)
		if p99 > time.Millisecond {
			t.Errorf("%s: p99 %v, want < 1ms", p.Name(), p99)
		}
	}
}
