package sim

import (
	"context"
	"strings"
	"testing"

	"github.com/railyard-io/railyard/internal/alloc"
)

// The memo saves most calls at scale, and never numa's (not pure).
func TestMemoSavesCalls(t *testing.T) {
	res, err := Run(context.Background(), Config{Topology: builtin(t, "dgx-h100"), Nodes: 100, Pods: 100_000, Seed: 1,
		Policies: policies(t, "gpu-aware", "numa")})
	if err != nil {
		t.Fatal(err)
	}
	ga, numa := res.Policies[0], res.Policies[1]
	t.Logf("gpu-aware: %d calls for %d placed pods, %d timed; numa: %d calls", ga.PolicyCalls, ga.PodsPlaced, ga.TimedPods, numa.PolicyCalls)
	if ga.PolicyCalls > ga.PodsPlaced/5 {
		t.Errorf("gpu-aware asked %d times for %d pods: the memo saves less than expected", ga.PolicyCalls, ga.PodsPlaced)
	}
	if numa.PolicyCalls < numa.PodsPlaced {
		t.Errorf("numa asked %d times for %d placed pods: its seeded draws must not be remembered", numa.PolicyCalls, numa.PodsPlaced)
	}
	if want := 100_000/6 + 1; ga.TimedPods > want || ga.TimedPods < want*95/100 {
		t.Errorf("%d timed pods, want every sixth of 100,000 arrivals (at least 16,384) but the few rejected", ga.TimedPods)
	}
}

// fickle answers the first or the last offered devices, alternately: it
// claims purity it does not have.
type fickle struct{ n int }

func (*fickle) Name() string       { return "fickle" }
func (*fickle) Needs() alloc.Needs { return alloc.Needs{} }
func (f *fickle) Allocate(req alloc.Request) (alloc.Result, error) {
	f.n++
	if f.n%2 == 0 {
		return alloc.Result{Devices: req.Available[len(req.Available)-req.Size:]}, nil
	}
	return alloc.Result{Devices: req.Available[:req.Size]}, nil
}

func TestImpurePolicyIsCaught(t *testing.T) {
	_, err := Run(context.Background(), Config{Topology: builtin(t, "dgx-1"), Nodes: 4, Pods: 500, Seed: 1, Mix: []MixEntry{{GPUs: 1, Weight: 1}},
		TopologyPolicy: TMNone, timeEvery: 3, Policies: []Policy{{Name: "fickle", Binding: AtAllocate, Alloc: &fickle{}, Pure: true}}})
	if err == nil || !strings.Contains(err.Error(), "not pure") {
		t.Fatalf("err %v, want a policy that is not pure", err)
	}
}
