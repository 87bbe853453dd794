package alloc

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/railyard-io/railyard/machines"
)

// TestPropertyContractOnBuiltinMachines runs the contract and optimality
// checks of TestPropertyContract on every built-in machine model (its
// generated sysfs tree discovered like a real node, 4 VFs per PF), and
// checks that optimal stays exact there (never the greedy fallback).
func TestPropertyContractOnBuiltinMachines(t *testing.T) {
	r := rand.New(rand.NewPCG(31, 37))
	policies := allPolicies(t)
	iters := 400
	if testing.Short() {
		iters = 60
	}
	for _, name := range machines.Names() {
		topo, err := machines.Topology(context.Background(), name, 4)
		if err != nil {
			t.Fatal(err)
		}
		ix := NewIndex(topo)
		t.Run(name, func(t *testing.T) {
			for it := 0; it < iters; it++ {
				req, valid := randomRequest(r, ix)
				scores := map[string]int{}
				for _, p := range policies {
					res, err := p.Allocate(req)
					if !valid {
						if err == nil {
							t.Fatalf("%s accepted an invalid request", p.Name())
						}
						continue
					}
					if err != nil {
						t.Fatalf("%s: %v", p.Name(), err)
					}
					checkContract(t, p.Name(), req, res)
					scores[p.Name()] = ix.Score(req.GPUs, res.Devices)
					if p.Name() == "optimal" {
						for _, why := range res.Reasons {
							if strings.Contains(why, "not exact") {
								t.Fatalf("optimal fell back to the greedy cover: %s", why)
							}
						}
					}
				}
				for n, sc := range scores {
					if sc < scores["optimal"] {
						t.Fatalf("%s scored %d < optimal %d", n, sc, scores["optimal"])
					}
				}
			}
		})
	}
}

// TestOptimalExactOnManyNICs: AWS p5 has 32 EFA PFs, 4 per GPU. A request
// for fewer devices than the pod's 8 GPUs must still be searched exactly
// (equivalent PFs are merged): each device then sits under a different
// GPU's switch.
func TestOptimalExactOnManyNICs(t *testing.T) {
	topo, err := machines.Topology(context.Background(), "aws-p5", 0)
	if err != nil {
		t.Fatal(err)
	}
	ix := NewIndex(topo)
	var gpus []string
	for _, g := range topo.GPUs {
		gpus = append(gpus, g.PCI)
	}
	for size := 1; size < len(gpus); size++ {
		req := Request{Topology: topo, Available: ix.Devices(), Size: size, GPUs: gpus}
		res, err := NewOptimal().Allocate(req)
		if err != nil {
			t.Fatal(err)
		}
		for _, why := range res.Reasons {
			if strings.Contains(why, "not exact") {
				t.Fatalf("size %d: %s", size, why)
			}
		}
		// size GPUs get a PIX EFA (rank 1), the others PHB (rank 3).
		if got, want := ix.Score(gpus, res.Devices), size*1+(len(gpus)-size)*3; got != want {
			t.Errorf("size %d: score %d, want %d (%v)", size, got, want, res.Devices)
		}
	}
}
