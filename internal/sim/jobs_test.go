package sim

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/railyard-io/railyard/internal/fabric"
	"github.com/railyard-io/railyard/internal/topology"
	"github.com/railyard-io/railyard/machines"
)

// tracing runs cfg and returns its result and every placed job of
// several pods, by policy.
func tracing(t *testing.T, cfg Config) (*Result, map[string][]jobTrace) {
	t.Helper()
	var mu sync.Mutex
	jobs := map[string][]jobTrace{}
	cfg.trace = func(j jobTrace) {
		mu.Lock()
		defer mu.Unlock()
		jobs[j.Policy] = append(jobs[j.Policy], j)
	}
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return res, jobs
}

// railsOf maps each device a node hands out to its rail as package fabric
// numbers the ports it cables (fabric.PortsOf), -1 for a NIC without one:
// the simulator's tables are checked against it, not reused.
func railsOf(t *testing.T, topo *topology.Topology) func(dev string) int {
	t.Helper()
	byNIC := map[string]int{}
	for _, p := range fabric.PortsOf(topo) {
		byNIC[p.NIC] = p.Rail
	}
	return func(dev string) int {
		nic, ok := topo.NIC(dev)
		if !ok {
			t.Fatalf("device %s has no NIC", dev)
		}
		name := nic.RDMA
		if name == "" {
			name = nic.PCI
		}
		r, ok := byNIC[name]
		if !ok {
			t.Fatalf("NIC %s of %s is not among fabric's ports", name, dev)
		}
		return r
	}
}

// railSet is the sorted rails of a pod's devices.
func railSet(rail func(string) int, devs []string) []int {
	var out []int
	for _, d := range devs {
		out = append(out, rail(d))
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// The reported failure (ai-dynamo/dynamo#13596): per-pod pcieRoot claims
// give the two 4-GPU pods of a job rails 0-3 and 4-7 on an 8-rail
// machine. The baseline shows it; one rail set per job never does.
func TestPCIeRootBaselineSplitsTwoByFourJobsOverRails(t *testing.T) {
	t.Parallel()
	topo := builtin(t, "dgx-h100") // 8 GPUs, 8 rails
	res, jobs := tracing(t, Config{Topology: topo, Nodes: 64, Pods: 4000, Seed: 3, Mix: []MixEntry{{Pods: 2, GPUs: 4, Weight: 1}},
		Policies: policies(t, "dra-pcieroot", "job-rails")})
	rail := railsOf(t, topo)
	halves := 0
	for _, j := range jobs["dra-pcieroot"] {
		a, b := railSet(rail, j.Devices[0]), railSet(rail, j.Devices[1])
		if (cmp.Equal(a, []int{0, 1, 2, 3}) && cmp.Equal(b, []int{4, 5, 6, 7})) || (cmp.Equal(a, []int{4, 5, 6, 7}) && cmp.Equal(b, []int{0, 1, 2, 3})) {
			halves++
		}
	}
	base, _ := res.Policy("dra-pcieroot")
	rails, _ := res.Policy("job-rails")
	t.Logf("dra-pcieroot: %.1f%% rail-consistent, %d of %d jobs on rails 0-3 and 4-7; job-rails %.1f%%",
		100*base.MultiPod.RailConsistent, halves, len(jobs["dra-pcieroot"]), 100*rails.MultiPod.RailConsistent)
	if halves == 0 || base.MultiPod.RailConsistent > 0.5 {
		t.Errorf("dra-pcieroot: %d jobs on rails 0-3 and 4-7, %.2f consistent; want the split the issue reports", halves, base.MultiPod.RailConsistent)
	}
	if rails.MultiPod.RailConsistent != 1 || rails.MultiPod.Placed == 0 {
		t.Errorf("job-rails: %+v, want every placed job on one rail set", rails.MultiPod)
	}
	if base.GDRFraction != 1 || rails.GDRFraction != 1 {
		t.Errorf("GPUDirect: dra-pcieroot %.3f, job-rails %.3f; want every GPU on its nearest NIC in both", base.GDRFraction, rails.GDRFraction)
	}
}

// Property: whatever the machine, device mode, scheduler and units, a job
// counts as rail-consistent exactly when its pods' devices are on the same
// rails (by fabric's numbering), and under one leaf layer exactly when it
// is also in one scalable unit; one rail set per job places only
// consistent jobs, each pod on its own node, after a wait within the
// limit. One-pod jobs are left out of these counts (one pod is always on
// one rail set).
func TestJobsCountedRailConsistentOnlyWhenTheyAre(t *testing.T) {
	t.Parallel()
	for _, machine := range []string{"dgx-h100", "dgx-1", "aws-p5", "azure-ndv4"} {
		for _, devs := range []DeviceMode{PerGPU, PerPod} {
			for _, sched := range []Scheduler{MostAllocated, LeastAllocated} {
				name := fmt.Sprintf("%s/%s/%s", machine, devs, sched)
				topo := builtin(t, machine)
				if topo == nil {
					t.Fatalf("no machine %s (have %v)", machine, machines.Names())
				}
				cfg := Config{Topology: topo, Nodes: 24, Pods: 3000, Seed: 11, Mix: namedMixes()["jobs"], Devices: devs, Scheduler: sched, SUNodes: 5, MaxWait: 0.5,
					Policies: policies(t, append(PolicyNames(), ExtraPolicyNames()...)...)}
				res, jobs := tracing(t, cfg)
				rail := railsOf(t, topo)
				for _, p := range res.Policies {
					var consistent int
					for _, j := range jobs[p.Name] {
						same := true
						for _, d := range j.Devices[1:] {
							same = same && cmp.Equal(railSet(rail, j.Devices[0]), railSet(rail, d))
						}
						oneUnit := true
						for _, n := range j.Nodes {
							oneUnit = oneUnit && n/cfg.SUNodes == j.Nodes[0]/cfg.SUNodes
						}
						if j.Consistent != same || j.OneLeaf != (same && oneUnit) {
							t.Fatalf("%s %s: job on %v with devices %v counted consistent %v, one leaf %v", name, p.Name, j.Nodes, j.Devices, j.Consistent, j.OneLeaf)
						}
						if same {
							consistent++
						}
						if p.Job.OneSet() {
							if !same {
								t.Fatalf("%s %s: placed a job on different rails: %v", name, p.Name, j.Devices)
							}
							if nodes := slices.Compact(slices.Sorted(slices.Values(j.Nodes))); len(nodes) != len(j.Nodes) {
								t.Fatalf("%s %s: two pods of a job on one node: %v", name, p.Name, j.Nodes)
							}
						}
						if w := j.Start - j.Arrive; w < 0 || w > cfg.MaxWait || (w > 0 && !p.Job.OneSet()) {
							t.Fatalf("%s %s: job waited %g", name, p.Name, w)
						}
					}
					mp := p.MultiPod
					if mp == nil || mp.Placed != len(jobs[p.Name]) || mp.Placed+mp.Rejected != mp.Jobs {
						t.Fatalf("%s %s: multi-pod result %+v for %d traced jobs", name, p.Name, mp, len(jobs[p.Name]))
					}
					if mp.Placed > 0 && mp.RailConsistent != float64(consistent)/float64(mp.Placed) {
						t.Errorf("%s %s: rail_consistent_jobs %g, traced %d of %d", name, p.Name, mp.RailConsistent, consistent, mp.Placed)
					}
				}
			}
		}
	}
}

// Same seed, same result (decision times aside); another seed, another.
func TestJobsAreSeededAndReproducible(t *testing.T) {
	t.Parallel()
	cfg := Config{Topology: builtin(t, "dgx-h100"), Nodes: 40, Pods: 6000, Seed: 5, Mix: namedMixes()["jobs"], SUNodes: 8}
	run := func(cfg Config) *Result {
		res, err := Run(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	ignore := cmpopts.IgnoreFields(PolicyResult{}, "AllocP50us", "AllocP99us", "AllocMaxus", "Elapsed")
	first, again := run(cfg), run(cfg)
	if diff := cmp.Diff(first, again, ignore, cmpopts.IgnoreFields(Result{}, "Elapsed")); diff != "" {
		t.Errorf("same seed (-first +again):\n%s", diff)
	}
	cfg.Seed = 6
	other := run(cfg)
	if cmp.Equal(first.Policies, other.Policies, ignore) {
		t.Error("seeds 5 and 6 gave the same results")
	}
	for _, p := range first.Policies {
		if p.MultiPod == nil || p.MultiPod.Jobs == 0 {
			t.Errorf("%s: no jobs of several pods: %+v", p.Name, p.MultiPod)
		}
	}
}

// A job of two pods on a one-node cluster: each pod on its own shares
// the node (the pods on different rails), one rail set per job needs two
// nodes, so every job waits the limit and is rejected for it; its GPUs
// count as stranded all that time.
func TestJobsWaitForOneRailSetThenGiveUp(t *testing.T) {
	t.Parallel()
	res, err := Run(context.Background(), Config{Topology: builtin(t, "dgx-h100"), Nodes: 1, Pods: 200, Seed: 2, Load: 0.3,
		Mix: []MixEntry{{Pods: 2, GPUs: 4, Weight: 1}}, MaxWait: 0.25, Policies: policies(t, "dra-pcieroot", "job-rails")})
	if err != nil {
		t.Fatal(err)
	}
	base, _ := res.Policy("dra-pcieroot")
	rails, _ := res.Policy("job-rails")
	if base.MultiPod.Placed == 0 || base.MultiPod.RailConsistent != 0 {
		t.Errorf("dra-pcieroot: %+v, want jobs placed, all on two rail sets of one node", base.MultiPod)
	}
	mp := rails.MultiPod
	if mp.Placed != 0 || mp.GaveUp != mp.Jobs || mp.Jobs != 100 || rails.Rejections[RejectRails] != 200 {
		t.Errorf("job-rails: %+v, rejections %v; want all 100 jobs (200 pods) given up after waiting", mp, rails.Rejections)
	}
	// Every job waited 0.25 with 8 GPUs: 100 x 0.25 x 8 GPU-time units.
	horizon := float64(res.Jobs) / (0.3 * 8 / 8) // arrival rate: load x GPUs / GPUs per job
	if mp.RailStrandedGPUs < 200/horizon*0.5 || mp.RailStrandedGPUs > 200/horizon*2 {
		t.Errorf("rail-stranded GPUs %.3f, want about %.3f", mp.RailStrandedGPUs, 200/horizon)
	}
}

// On a loaded small cluster some jobs wait for one rail set and then
// start; each-pod-on-its-own never waits.
func TestJobsWaitForOneRailSet(t *testing.T) {
	t.Parallel()
	res, _ := tracing(t, Config{Topology: builtin(t, "dgx-h100"), Nodes: 16, Pods: 8000, Seed: 1, Mix: []MixEntry{{GPUs: 1, Weight: 4}, {Pods: 2, GPUs: 2, Weight: 1}, {Pods: 2, GPUs: 4, Weight: 1}},
		Policies: policies(t, "late-bound", "job-rails")})
	for _, p := range res.Policies {
		mp := p.MultiPod
		t.Logf("%s: %+v", p.Name, *mp)
		if p.Job == OneRailSet {
			if mp.Waited == 0 || mp.WaitMean <= 0 || mp.WaitMax > 1 || mp.RailStrandedGPUs <= 0 {
				t.Errorf("%s: %+v, want some jobs to wait (at most the default limit of 1)", p.Name, *mp)
			}
			continue
		}
		if mp.Waited != 0 || mp.WaitMax != 0 || mp.RailStrandedGPUs != 0 {
			t.Errorf("%s: %+v, a job of pods placed each on its own never waits", p.Name, *mp)
		}
	}
}

// The simulator numbers rails as package fabric does on every built-in
// machine (topology.NICRails): what it calls rail i is what fabric
// cables to leaf i.
func TestRailsNumberedAsFabric(t *testing.T) {
	t.Parallel()
	all, err := machineTopologies()
	if err != nil {
		t.Fatal(err)
	}
	for name, topo := range all {
		m := newMachine(topo)
		rail := railsOf(t, topo)
		for d, addr := range m.devs {
			got := -1
			if r := m.rails.pfRail[m.devPF[d]]; r >= 0 {
				got = m.rails.railID[r]
			}
			if want := rail(addr); got != want {
				t.Errorf("%s: device %s on rail %d, fabric says %d", name, addr, got, want)
			}
		}
	}
}

// Single pods are what the simulator drew before jobs: the mix "uniform"
// as jobs of one pod gives one job per pod and no multi-pod result.
func TestSinglePodsAreJobsOfOnePod(t *testing.T) {
	t.Parallel()
	res, err := Run(context.Background(), Config{Topology: builtin(t, "dgx-h100"), Nodes: 10, Pods: 1000, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if res.Jobs != 1000 || res.Pods != 1000 {
		t.Errorf("%d jobs, %d pods; want 1000 of each", res.Jobs, res.Pods)
	}
	for _, p := range res.Policies {
		if p.MultiPod != nil {
			t.Errorf("%s: multi-pod result %+v without jobs of several pods", p.Name, *p.MultiPod)
		}
	}
}

// One rail set per job also keeps a job in one scalable unit when some
// unit has room (its traffic then never crosses the spine); pods placed
// each on its own land wherever the scheduler scores best.
func TestRailSetJobsPreferOneUnit(t *testing.T) {
	t.Parallel()
	res, err := Run(context.Background(), Config{Topology: builtin(t, "dgx-h100"), Nodes: 64, SUNodes: 8, Pods: 8000, Seed: 1,
		Mix: []MixEntry{{GPUs: 1, Weight: 2}, {Pods: 2, GPUs: 4, Weight: 1}, {Pods: 4, GPUs: 2, Weight: 1}}, Policies: policies(t, "dra-pcieroot", "job-rails")})
	if err != nil {
		t.Fatal(err)
	}
	base, _ := res.Policy("dra-pcieroot")
	rails, _ := res.Policy("job-rails")
	t.Logf("one leaf layer: dra-pcieroot %.3f, job-rails %.3f", base.MultiPod.OneLeafLayer, rails.MultiPod.OneLeafLayer)
	if rails.MultiPod.OneLeafLayer < 0.75 || rails.MultiPod.OneLeafLayer < 4*base.MultiPod.OneLeafLayer {
		t.Errorf("one leaf layer: job-rails %.3f, dra-pcieroot %.3f; want job-rails at least 0.75 and four times the baseline",
			rails.MultiPod.OneLeafLayer, base.MultiPod.OneLeafLayer)
	}
}

// The rail set with room on the most nodes first strands fewer GPUs than
// the scheduler's order (job-rails-first-fit): taking the fullest node's
// rails chains half-used nodes, so more pods find no node. Both keep
// every job on one rail set.
func TestMostRoomFirstRejectsFewerPodsThanFirstFit(t *testing.T) {
	t.Parallel()
	res, err := Run(context.Background(), Config{Topology: builtin(t, "dgx-h100"), Nodes: 256, SUNodes: 32, Pods: 40000, Load: 0.95, Seed: 1,
		Mix: namedMixes()["jobs"], Policies: policies(t, "job-rails", "job-rails-first-fit")})
	if err != nil {
		t.Fatal(err)
	}
	most, _ := res.Policy("job-rails")
	first, _ := res.Policy("job-rails-first-fit")
	t.Logf("rejected pods: job-rails %d, job-rails-first-fit %d", most.Rejected, first.Rejected)
	if most.Rejected >= first.Rejected || most.MultiPod.RailConsistent != 1 || first.MultiPod.RailConsistent != 1 {
		t.Errorf("job-rails rejected %d pods (%.3f consistent), job-rails-first-fit %d (%.3f); want fewer for job-rails, both all consistent",
			most.Rejected, most.MultiPod.RailConsistent, first.Rejected, first.MultiPod.RailConsistent)
	}
}
