package sim

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/railyard-io/railyard/internal/alloc"
	"github.com/railyard-io/railyard/internal/topology"
	"github.com/railyard-io/railyard/machines"
)

func TestPolicyByName(t *testing.T) {
	want := map[string]Binding{
		"kubelet": AtAllocate, "numa": AtAllocate, "spread": AtAllocate, "gpu-aware": AtAllocate, "packed": AtAllocate,
		"late-bound": AtSandbox, "late-bound-lowest-numa": AtSandbox, "dra-pcieroot": InClaim, "job-rails": InClaim, "job-rails-admission": InClaim, "job-rails-first-fit": InClaim, "optimal": InClaim,
	}
	for _, n := range append(PolicyNames(), ExtraPolicyNames()...) {
		p, err := PolicyByName(n)
		if err != nil {
			t.Fatal(err)
		}
		if p.Name != n || p.Binding != want[n] || p.Alloc == nil {
			t.Errorf("%s: %+v, want binding %s", n, p, want[n])
		}
		delete(want, n)
	}
	if len(want) != 0 {
		t.Errorf("not listed: %v", want)
	}
	if _, err := PolicyByName("nearest"); !errors.Is(err, ErrConfig) {
		t.Errorf("unknown policy: err %v, want ErrConfig", err)
	}
	if slices.Contains(PolicyNames(), "late-bound-lowest-numa") {
		t.Error("a behaviour no longer built is compared by default")
	}
}

// TestPolicyNamesFollowAlloc: the simulator compares every policy of
// package alloc's registry (a policy added there is simulated without a
// second list to edit), baselines first and the optimum last.
func TestPolicyNamesFollowAlloc(t *testing.T) {
	t.Parallel()
	want := []string{"kubelet", "numa", "spread", "gpu-aware", "packed", "late-bound", "dra-pcieroot", "job-rails", "job-rails-admission", "optimal"}
	if diff := cmp.Diff(want, PolicyNames()); diff != "" {
		t.Errorf("PolicyNames (-want +got):\n%s", diff)
	}
	for _, n := range alloc.Names() {
		if !slices.Contains(PolicyNames(), n) {
			t.Errorf("alloc's %q is not simulated", n)
		}
	}
}

// On DGX-1 two PLX switches share a PCIe root: same root is only PHB for
// the GPUs of the second switch, and first fit takes the lowest address.
func TestPCIeRootFirstFitOnDGX1(t *testing.T) {
	topo, err := machines.Topology(context.Background(), "dgx-1", 0)
	if err != nil {
		t.Fatal(err)
	}
	const (
		gpu0, gpu2, gpu4 = "0000:06:00.0", "0000:0a:00.0", "0000:85:00.0"
		nic0, nic1, nic2 = "0000:05:00.0", "0000:0c:00.0", "0000:84:00.0"
	)
	all := []string{nic0, nic1, nic2, "0000:8b:00.0"}
	p := newPCIeRootFirstFit()
	for _, tc := range []struct {
		name  string
		avail []string
		gpus  []string
		size  int
		want  []string
	}{
		{"GPU0's switch NIC is the root's first", all, []string{gpu0}, 1, []string{nic0}},
		{"GPU2 gets the root's first NIC, across the host bridge", all, []string{gpu2}, 1, []string{nic0}},
		{"two GPUs, one NIC each on their root", all, []string{gpu0, gpu2}, 2, []string{nic0, nic1}},
		{"fewer NICs than GPUs: GPUs in order", all, []string{gpu4, gpu0}, 1, []string{nic2}},
		{"root exhausted: first free anywhere", []string{nic2, nic1}, []string{gpu4, gpu0}, 2, []string{nic2, nic1}},
		{"unsorted offer", []string{nic2, nic0, nic1}, []string{gpu2}, 1, []string{nic0}},
		{"no GPUs: first fit", all, nil, 2, []string{nic0, nic1}},
	} {
		res, err := p.Allocate(alloc.Request{Topology: topo, Available: tc.avail, Size: tc.size, GPUs: tc.gpus})
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if !slices.Equal(res.Devices, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, res.Devices, tc.want)
		}
	}
	res, err := p.Allocate(alloc.Request{Topology: topo, Available: all, MustInclude: []string{nic2}, Size: 2, GPUs: []string{gpu0}})
	if err != nil || !slices.Equal(res.Devices, []string{nic2, nic0}) {
		t.Errorf("must-include first: %v, %v", res.Devices, err)
	}
	for name, req := range map[string]alloc.Request{
		"no topology":        {Available: all, Size: 1},
		"too large":          {Topology: topo, Available: all, Size: 5},
		"negative":           {Topology: topo, Available: all, Size: -1},
		"must not offered":   {Topology: topo, Available: []string{nic0}, MustInclude: []string{nic1}, Size: 1},
		"must exceeding":     {Topology: topo, Available: all, MustInclude: []string{nic0, nic1}, Size: 1},
		"repeats do not pad": {Topology: topo, Available: []string{nic0, nic0}, Size: 2},
	} {
		if _, err := p.Allocate(req); !errors.Is(err, alloc.ErrInvalidRequest) {
			t.Errorf("%s: err %v, want ErrInvalidRequest", name, err)
		}
	}
}

// The dra-pcieroot model matches what the machines' roots allow: DGX H100
// has one GPU and its NIC per root (every GPU aligned), DGX-1 two switches
// per root (first fit serves half the GPUs of a full node across the host
// bridge).
func TestPCIeRootFirstFitInTheCluster(t *testing.T) {
	for _, tc := range []struct {
		machine string
		want    float64
	}{{"dgx-h100", 1}, {"dgx-1", 0.5}} {
		res, err := Run(context.Background(), Config{Topology: builtin(t, tc.machine), Nodes: 4, Pods: 100, Seed: 1, Load: 0.2,
			Mix: []MixEntry{{GPUs: 8, Weight: 1}}, Policies: policies(t, "dra-pcieroot")})
		if err != nil {
			t.Fatal(err)
		}
		if p := res.Policies[0]; p.GDRFraction != tc.want || p.GPUs == 0 {
			t.Errorf("%s: dra-pcieroot gdr %.3f over %d GPUs, want %.3f", tc.machine, p.GDRFraction, p.GPUs, tc.want)
		}
	}
}

// Late binding as the device plugin first preferred tokens: an 8-GPU pod
// on DGX H100 spans both NUMA nodes; kubelet offers the tokens of both and
// the plugin preferred the lowest NUMA node's, so all eight bound on NUMA
// node 0, and the four GPUs of NUMA node 1 got a NIC across the sockets.
// Balanced tokens (late-bound, as built) give every GPU its rail NIC.
func TestLateBoundTokensOnOneNUMANodeStarveTheOther(t *testing.T) {
	res, err := Run(context.Background(), Config{Topology: builtin(t, "dgx-h100"), Nodes: 4, Pods: 200, Seed: 1, Load: 0.3,
		Mix: []MixEntry{{GPUs: 8, Weight: 1}}, Policies: policies(t, "late-bound-lowest-numa", "late-bound", "optimal")})
	if err != nil {
		t.Fatal(err)
	}
	low, lb, opt := res.Policies[0], res.Policies[1], res.Policies[2]
	if low.GPUs == 0 || low.GDRFraction != 0.5 || low.ClassCount(topology.SYS) != low.GPUs/2 {
		t.Errorf("late-bound-lowest-numa: gdr %.3f, classes %v over %d GPUs; want half PIX, half SYS", low.GDRFraction, low.Classes, low.GPUs)
	}
	if lb.GDRFraction != 1 || opt.GDRFraction != 1 {
		t.Errorf("late-bound gdr %.3f, optimal %.3f; want 1", lb.GDRFraction, opt.GDRFraction)
	}
}

// One-GPU pods sit on one NUMA node, so their tokens are on the GPU's
// node: late binding always knows the GPU and reaches the optimum whatever
// kubelet's order, where gpu-aware at allocate time falls back to spread
// for about half the pods. (Multi-GPU pods that a fragmented node spreads
// over both sockets lose like 8-GPU pods, see above.)
func TestLateBoundIgnoresKubeletOrder(t *testing.T) {
	res, err := Run(context.Background(), Config{Topology: builtin(t, "dgx-h100"), Nodes: 10, Pods: 2000, Seed: 3,
		Mix: []MixEntry{{GPUs: 1, Weight: 1}}, Policies: policies(t, "gpu-aware", "late-bound", "optimal")})
	if err != nil {
		t.Fatal(err)
	}
	ga, lb, opt := res.Policies[0], res.Policies[1], res.Policies[2]
	if lb.GDRFraction != 1 || opt.GDRFraction != 1 {
		t.Errorf("late-bound gdr %.4f, optimal %.4f; want 1", lb.GDRFraction, opt.GDRFraction)
	}
	t.Logf("gpu-aware at allocate time: %.3f", ga.GDRFraction)
	if ga.GDRFraction > 0.9 {
		t.Errorf("gpu-aware at allocate time, GPUs known for half the pods: gdr %.3f, want well below 1", ga.GDRFraction)
	}
}

// Kubelet's map order is a seeded coin toss per pod: half the pods by
// default, all of them with GPUsKnown 1.
func TestGPUsKnownIsACoinToss(t *testing.T) {
	for _, tc := range []struct {
		known    *float64
		low, top float64
	}{{nil, 0.48, 0.52}, {ptr(1.0), 1, 1}, {ptr(0.0), 0, 0}} {
		cfg, err := Config{Topology: builtin(t, "dgx-1"), Nodes: 10, Pods: 20000, Seed: 7, GPUsKnown: tc.known}.withDefaults()
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, known := range mustWorkload(t, cfg, 8).gpusKnown {
			if known {
				n++
			}
		}
		if f := float64(n) / 20000; f < tc.low || f > tc.top {
			t.Errorf("GPUsKnown %v: %.3f of pods, want %.2f to %.2f", tc.known, f, tc.low, tc.top)
		}
	}
}

func ptr[T any](v T) *T { return &v }

// A policy without an allocator or with an unknown binding is a
// configuration error.
func TestBadPolicyConfig(t *testing.T) {
	topo := builtin(t, "dgx-1")
	for name, p := range map[string]Policy{
		"no alloc":    {Name: "x", Binding: AtAllocate},
		"bad binding": {Name: "x", Binding: "later", Alloc: alloc.NewSpread()},
	} {
		if _, err := Run(context.Background(), Config{Topology: topo, Nodes: 1, Policies: []Policy{p}}); !errors.Is(err, ErrConfig) {
			t.Errorf("%s: err %v, want ErrConfig", name, err)
		}
	}
}
