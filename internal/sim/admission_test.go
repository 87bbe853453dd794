package sim

import (
	"context"
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/railyard-io/railyard/internal/jobrails"
)

// admissionRunner is a runner of job-rails-admission on nodes dgx-h100
// nodes whose jobs are jobs (pods of 4 GPUs, one device each), driven
// by the test: it sets what is busy and calls admitJob and retryAdmitted
// as arrivals and departures would.
func admissionRunner(t *testing.T, nodes int, rechooseAfter float64, jobs ...jobSpec) *runner {
	t.Helper()
	cfg, err := Config{Topology: builtin(t, "dgx-h100"), Nodes: nodes, Pods: 1, Mix: []MixEntry{{Pods: 2, GPUs: 4, Weight: 1}},
		RechooseAfter: rechooseAfter, MaxWait: 1, Policies: policies(t, "job-rails-admission")}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	r := newRunner(&cfg, newMachine(cfg.Topology), cfg.Policies[0])
	pods := 0
	for i := range jobs {
		jobs[i].first = int32(pods)
		pods += int(jobs[i].pods)
	}
	r.w = &workload{jobs: jobs, gpusKnown: make([]bool, pods)}
	r.timeEvery, r.maxDev = 1, 8
	return r
}

// rails is the rail set of dense rails rs.
func rails(rs ...int) uint64 {
	var s uint64
	for _, r := range rs {
		s |= bit(r)
	}
	return s
}

var low, high = rails(0, 1, 2, 3), rails(4, 5, 6, 7)

// busy marks the GPUs of rail set set busy on node (free when free).
func busy(r *runner, node int, set uint64, free bool) {
	g := r.m.rails.gpusOf(set)
	if free {
		r.c.setFreeGPUs(node, r.c.freeGPU[node]|g)
		return
	}
	r.c.setFreeGPUs(node, r.c.freeGPU[node]&^g)
}

func job2x4(arrive float64) jobSpec {
	return jobSpec{arrive: arrive, lifetime: 1, pods: 2, gpus: 4, devices: 4}
}

// A template made up front (`rails template` run before the job, the
// cluster then empty) holds rails 0-3, the lowest of the sets with the
// most room. Another job takes rails 0-3 on both nodes meanwhile: at
// admission the controller chooses rails 4-7 and the job starts at once,
// where the up-front set has room on no node and the job would wait.
func TestAdmissionChoiceDiffersFromUpFrontChoice(t *testing.T) {
	t.Parallel()
	topo := builtin(t, "dgx-h100")
	jobs := []jobSpec{{arrive: 0.1, lifetime: 10, pods: 2, gpus: 4, devices: 4}, {arrive: 0.2, lifetime: 1, pods: 2, gpus: 4, devices: 4}}
	r := admissionRunner(t, 2, 0.05, jobs...)
	upFront, room, ok := r.chooseAtAdmission(&r.w.jobs[1])
	if !ok || upFront != low || room != 2 {
		t.Fatalf("up-front choice on the empty cluster: rails %b, room %d, want rails 0-3 on 2 nodes", upFront, room)
	}

	// The whole run, traced: the first job takes rails 0-3.
	cfg := Config{Topology: topo, Nodes: 2, Pods: 1, Mix: []MixEntry{{Pods: 2, GPUs: 4, Weight: 1}}, Policies: policies(t, "job-rails-admission")}
	var traces []jobTrace
	cfg.trace = func(j jobTrace) { traces = append(traces, j) }
	cfg, err := cfg.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	w := workload{jobs: jobs, gpusKnown: make([]bool, 4)}
	w.jobs[1].first = 2
	res, err := newRunner(&cfg, newMachine(topo), cfg.Policies[0]).run(context.Background(), &w)
	if err != nil {
		t.Fatal(err)
	}
	rail := railsOf(t, topo)
	if len(traces) != 2 || res.MultiPod.Placed != 2 {
		t.Fatalf("%d jobs traced, %+v; want both placed", len(traces), res.MultiPod)
	}
	for i, want := range [][]int{{0, 1, 2, 3}, {4, 5, 6, 7}} {
		j := traces[i]
		for p, devs := range j.Devices {
			if got := railSet(rail, devs); !slices.Equal(got, want) {
				t.Errorf("job %d pod %d on rails %v, want %v", i, p, got, want)
			}
		}
		if j.Start != j.Arrive {
			t.Errorf("job %d arrived at %g, started at %g; want at once", i, j.Arrive, j.Start)
		}
	}
}

// A job admitted when no set has room waits on the lowest set; once it
// has waited RechooseAfter with no pod started and another set has room
// for all its pods, it is re-chosen and starts there.
func TestRechoiceAfterTheBoundWhenAnotherSetHasRoom(t *testing.T) {
	t.Parallel()
	r := admissionRunner(t, 2, 0.05, job2x4(0.1))
	for n := range 2 {
		busy(r, n, low|high, false)
	}
	r.now = 0.1
	if err := r.admitJob(0); err != nil {
		t.Fatal(err)
	}
	a := r.admitted[0]
	if a == nil || a.set != low || len(a.started.node) != 0 || len(r.waiting) != 1 {
		t.Fatalf("admitted on a full cluster: %+v, want waiting on rails 0-3, nothing started", a)
	}
	// Rails 4-7 free on both nodes before the bound: the job stays on 0-3.
	for n := range 2 {
		busy(r, n, high, true)
	}
	r.now = 0.12
	if err := r.retryAdmitted(4); err != nil {
		t.Fatal(err)
	}
	if a.set != low || r.jobs.rechosen != 0 || r.jobs.placed != 0 {
		t.Fatalf("re-chosen before the bound: set %b, re-choices %d, placed %d", a.set, r.jobs.rechosen, r.jobs.placed)
	}
	// Past the bound, at a departure that freed nothing the job can use
	// (a single GPU): the due re-choice is still looked at.
	r.now = 0.16
	if err := r.retryAdmitted(1); err != nil {
		t.Fatal(err)
	}
	if r.jobs.rechosen != 1 || r.jobs.placed != 1 || len(r.waiting) != 0 || r.admitted[0] != nil {
		t.Fatalf("past the bound: re-choices %d, placed %d, waiting %v; want re-chosen and placed", r.jobs.rechosen, r.jobs.placed, r.waiting)
	}
	for n := range 2 {
		if got := r.c.freeGPU[n]; got != 0 {
			t.Errorf("node %d free GPUs %b, want none (rails 0-3 busy, the job on 4-7)", n, got)
		}
	}
}

// No re-choice when the other set has room for some pods only.
func TestNoRechoiceWithoutRoomForAllPods(t *testing.T) {
	t.Parallel()
	r := admissionRunner(t, 2, 0.05, job2x4(0.1))
	for n := range 2 {
		busy(r, n, low|high, false)
	}
	r.now = 0.1
	if err := r.admitJob(0); err != nil {
		t.Fatal(err)
	}
	busy(r, 0, high, true)
	r.now = 0.5
	if err := r.retryAdmitted(4); err != nil {
		t.Fatal(err)
	}
	if a := r.admitted[0]; a == nil || a.set != low || r.jobs.rechosen != 0 {
		t.Fatalf("rails 4-7 with room on 1 node of 2: %+v, %d re-choices; want none", a, r.jobs.rechosen)
	}
}

// A pod that started holds the set: rails 4-7 free on two other nodes
// later, past the bound, and the job is not moved; its other pod waits
// until the job gives up, and the started pod's GPUs count as held idle.
func TestNoRechoiceOnceAPodStarted(t *testing.T) {
	t.Parallel()
	r := admissionRunner(t, 3, 0.05, job2x4(0.1))
	busy(r, 0, high, false) // node 0: rails 0-3 free, room for one pod
	for n := 1; n < 3; n++ {
		busy(r, n, low|high, false)
	}
	r.now = 0.1
	if err := r.admitJob(0); err != nil {
		t.Fatal(err)
	}
	a := r.admitted[0]
	if a == nil || a.set != low || !slices.Equal(a.started.node, []int32{0}) {
		t.Fatalf("admitted: %+v, want rails 0-3 with a pod started on node 0", a)
	}
	for n := 1; n < 3; n++ {
		busy(r, n, high, true)
	}
	r.now = 0.5
	if err := r.retryAdmitted(4); err != nil {
		t.Fatal(err)
	}
	if a.set != low || r.jobs.rechosen != 0 || r.jobs.placed != 0 || len(a.started.node) != 1 {
		t.Fatalf("rails 4-7 free on 2 nodes after a pod started: set %b, %d re-choices, placed %d; want none", a.set, r.jobs.rechosen, r.jobs.placed)
	}
	r.now = 1.2 // past MaxWait (1): the job gives up and gives its pod back
	if err := r.retryAdmitted(0); err != nil {
		t.Fatal(err)
	}
	if r.jobs.gaveUp != 1 || len(r.waiting) != 0 || r.c.freeGPU[0]&r.m.rails.gpusOf(low) != r.m.rails.gpusOf(low) {
		t.Fatalf("after max-wait: gave up %d, waiting %v, node 0 free %b; want given up, rails 0-3 free again", r.jobs.gaveUp, r.waiting, r.c.freeGPU[0])
	}
	if want := (1.2 - 0.1) * 4; r.jobs.partlyStarted != 1 || math.Abs(r.jobs.heldIdleGPUTime-want) > 1e-9 {
		t.Errorf("partly started %d, held idle %g GPU-time; want 1, %g", r.jobs.partlyStarted, r.jobs.heldIdleGPUTime, want)
	}
}

// chooseAtAdmission is jobrails.Choose on the same free GPUs: the set
// (with its tie-break) and its room, for every pod shape, on random
// states of a dgx-h100 cluster (one GPU per rail) and of a dgx-1 (two
// GPUs per NIC), the template's NIC on the root of each of its rail's
// GPUs (the pairing the simulator's rails stand for).
func TestAdmissionChoiceIsJobrailsChoose(t *testing.T) {
	t.Parallel()
	rnd := rand.New(rand.NewPCG(7, 38))
	for _, machine := range []string{"dgx-h100", "dgx-1"} {
		cfg, err := Config{Topology: builtin(t, machine), Nodes: 12, Pods: 1, Mix: []MixEntry{{Pods: 2, GPUs: 2, Weight: 1}},
			Policies: policies(t, "job-rails-admission")}.withDefaults()
		if err != nil {
			t.Fatal(err)
		}
		m := newMachine(cfg.Topology)
		r := newRunner(&cfg, m, cfg.Policies[0])
		rt := &m.rails
		all := uint64(1)<<len(m.gpus) - 1
		for trial := range 150 {
			for n := range cfg.Nodes {
				free := rnd.Uint64() & all
				if rnd.IntN(4) == 0 {
					free = all
				}
				r.c.setFreeGPUs(n, free)
			}
			nodes := jobrailsNodes(r, cfg.Nodes)
			for _, g := range []int32{1, 2, 4, 8} {
				pods := int32(1 + rnd.IntN(4))
				job := &jobSpec{pods: pods, gpus: g, devices: g}
				set, room, ok := r.chooseAtAdmission(job)
				choice, err := jobrails.Choose(nodes, int(pods), int(g))
				name := fmt.Sprintf("%s trial %d: %d pods of %d GPUs", machine, trial, pods, g)
				if choice.Set == nil {
					if ok {
						t.Fatalf("%s: simulator chose %b (room %d), jobrails none: %v", name, set, room, err)
					}
					continue
				}
				var want uint64
				for _, rg := range choice.Set {
					i, found := slices.BinarySearch(rt.railID, int(rg.Rail))
					if !found {
						t.Fatalf("%s: jobrails rail %d unknown", name, rg.Rail)
					}
					want |= bit(i)
				}
				if !ok || set != want || room != len(choice.Nodes) {
					t.Fatalf("%s: simulator rails %b room %d, jobrails %s (%b) room %d", name, set, room, choice.Set, want, len(choice.Nodes))
				}
			}
		}
	}
}

// jobrailsNodes is the runner's cluster as jobrails.Inventory would read
// it: each node's GPUs by rail (topology.NICRails' numbers), free or not,
// each rail's NIC on a root of its own shared with its GPUs, with a
// request slot per GPU (every NIC has VFs enough).
func jobrailsNodes(r *runner, n int) []jobrails.Node {
	m, rt := r.m, &r.m.rails
	out := make([]jobrails.Node, n)
	for node := range n {
		jn := jobrails.Node{Name: fmt.Sprint("node-", node), Rails: map[int64]*jobrails.Rail{}}
		for dense, gpus := range rt.railGPUs[:len(rt.railGPUs)-1] {
			id := int64(rt.railID[dense])
			root := fmt.Sprint("root-", id)
			jr := &jobrails.Rail{Rail: id, GPUs: bits.OnesCount64(gpus)}
			for g := range m.gpus {
				if gpus&(1<<g) == 0 {
					continue
				}
				jr.BusIDs = append(jr.BusIDs, m.gpus[g])
				jn.GPUs = append(jn.GPUs, jobrails.GPU{BusID: m.gpus[g], Root: root, Rail: id, Free: r.c.freeGPU[node]&(1<<g) != 0})
			}
			if jr.GPUs > 0 {
				jn.Rails[id] = jr
				jn.NICs = append(jn.NICs, jobrails.NIC{Rail: id, Root: root, Slots: jr.GPUs})
			}
		}
		out[node] = jn
	}
	return out
}

// On a loaded small cluster the controller's policy re-chooses jobs,
// starts some pods before their job's others and so holds GPUs idle;
// job-rails, placing a job whole or not at all, does none of it. Both
// keep every job on one rail set.
func TestAdmissionPolicyRechoosesAndHoldsGPUsOnALoadedCluster(t *testing.T) {
	t.Parallel()
	res, err := Run(context.Background(), Config{Topology: builtin(t, "dgx-h100"), Nodes: 16, Pods: 8000, Seed: 1,
		Mix: []MixEntry{{GPUs: 1, Weight: 4}, {Pods: 2, GPUs: 2, Weight: 1}, {Pods: 2, GPUs: 4, Weight: 1}}, Policies: policies(t, "job-rails", "job-rails-admission")})
	if err != nil {
		t.Fatal(err)
	}
	rails, _ := res.Policy("job-rails")
	adm, _ := res.Policy("job-rails-admission")
	t.Logf("job-rails %+v", *rails.MultiPod)
	t.Logf("job-rails-admission %+v", *adm.MultiPod)
	if mp := adm.MultiPod; mp.Rechosen == 0 || mp.PartlyStarted == 0 || mp.HeldIdleGPUs <= 0 || mp.RailConsistent != 1 || mp.WaitMax > 1 {
		t.Errorf("job-rails-admission: %+v; want re-choices, partly started jobs, GPUs held idle, every job on one set", *mp)
	}
	if mp := rails.MultiPod; mp.Rechosen != 0 || mp.PartlyStarted != 0 || mp.HeldIdleGPUs != 0 || mp.RailConsistent != 1 {
		t.Errorf("job-rails: %+v; want no re-choice, nothing held idle", *mp)
	}
}
