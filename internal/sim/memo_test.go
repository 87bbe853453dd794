package sim

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/railyard-io/railyard/internal/alloc"
)

// Remembering pure policies' answers changes no result: every policy,
// random settings, with and without the memo.
func TestMemoChangesNothing(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	n := 12
	if testing.Short() || raceEnabled {
		n = 4
	}
	for i := 0; i < n; i++ {
		cfg := randomConfig(t, r)
		cfg.Nodes, cfg.Pods = 2+r.IntN(20), 200+r.IntN(3000) // large enough to repeat requests
		cfg.timeEvery = 1 + r.IntN(50)
		t.Run(fmt.Sprintf("%d-%s", i, cfg.Machine), func(t *testing.T) {
			with, err := Run(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			cfg.AskEveryPod = true
			without, err := Run(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			for j, a := range with.Policies {
				b := without.Policies[j]
				if a.GDRGPUs != b.GDRGPUs || a.GPUs != b.GPUs || a.Rejected != b.Rejected || a.StrandedMean != b.StrandedMean ||
					fmt.Sprint(a.Classes) != fmt.Sprint(b.Classes) || fmt.Sprint(a.PodBandwidth) != fmt.Sprint(b.PodBandwidth) {
					t.Errorf("%s: memo changed the result:\n%+v\n%+v", a.Name, a, b)
				}
				if b.PolicyCalls < a.PolicyCalls {
					t.Errorf("%s: %d calls with the memo, %d without", a.Name, a.PolicyCalls, b.PolicyCalls)
				}
			}
		})
	}
}

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
	_, err := Run(context.Background(), Config{Topology: builtin(t, "dgx-1"), Nodes: 4, Pods: 500, Seed: 1, Mix: []MixEntry{{1, 1}},
		TopologyPolicy: TMNone, timeEvery: 3, Policies: []Policy{{Name: "fickle", Binding: AtAllocate, Alloc: &fickle{}, Pure: true}}})
	if err == nil || !strings.Contains(err.Error(), "not pure") {
		t.Fatalf("err %v, want a policy that is not pure", err)
	}
}
