package sim

import (
	"context"
	"errors"
	"math"
	"math/bits"
	"testing"

	"github.com/railyard-io/railyard/internal/alloc"
	"github.com/railyard-io/railyard/internal/topology"
)

func policies(t *testing.T, names ...string) []Policy {
	t.Helper()
	var out []Policy
	for _, n := range names {
		p, err := PolicyByName(n)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, p)
	}
	return out
}

func TestChooseGPUsSharesSwitchAndFitsBest(t *testing.T) {
	topo := builtin(t, "dgx-1") // 2 GPUs per PLX switch, 4 switches
	m := newMachine(topo)
	cfg, err := Config{Topology: topo, Nodes: 1}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	c := newCluster(m, &cfg)
	got := c.chooseGPUs(0, 2, ^uint64(0))
	if got != 0b11 {
		t.Fatalf("2-GPU pod got GPUs %08b, want the pair under switch 0", got)
	}
	// GPU0 busy: a 1-GPU pod takes GPU1 (best fit: its switch has exactly
	// one free GPU), keeping the whole switches for larger pods.
	c.setFreeGPUs(0, c.freeGPU[0]&^1)
	if got := c.chooseGPUs(0, 1, ^uint64(0)); got != 0b10 {
		t.Fatalf("1-GPU pod got %08b, want GPU1", got)
	}
	// A 4-GPU pod takes two whole switches.
	if got := c.chooseGPUs(0, 4, ^uint64(0)); bits.OnesCount64(got) != 4 || got&0b11 != 0 {
		t.Fatalf("4-GPU pod got %08b, want two whole free switches", got)
	}
	// Switch keys: four distinct switches, two GPUs each.
	per := map[int]int{}
	for _, s := range m.gpuSwitch {
		per[s]++
	}
	if len(per) != 4 {
		t.Fatalf("switch groups %v, want 4 of 2 GPUs", per)
	}
}

func TestSingleNUMANodeRejectsWidePods(t *testing.T) {
	topo := builtin(t, "dgx-1") // 4 GPUs per NUMA node
	for _, tc := range []struct {
		gpus         int
		wantRejected bool
	}{{8, true}, {4, false}} {
		res, err := Run(context.Background(), Config{Topology: topo, Nodes: 4, Pods: 200, Seed: 3,
			Mix: []MixEntry{{GPUs: tc.gpus, Weight: 1}}, TopologyPolicy: TMSingleNUMA, Policies: policies(t, "gpu-aware"), Load: 0.3})
		if err != nil {
			t.Fatal(err)
		}
		p := res.Policies[0]
		if tc.wantRejected && p.Rejections[RejectTopology] != 200 {
			t.Errorf("%d-GPU pods: rejections %v, want all 200 for topology affinity", tc.gpus, p.Rejections)
		}
		if !tc.wantRejected && p.Rejections[RejectTopology] != 0 {
			t.Errorf("%d-GPU pods: rejections %v, want none for topology affinity", tc.gpus, p.Rejections)
		}
	}
}

func TestKubeletBaselineFollowsTopologyManager(t *testing.T) {
	topo := builtin(t, "dgx-h100")
	run := func(tm TopologyPolicy) PolicyResult {
		res, err := Run(context.Background(), Config{Topology: topo, Nodes: 5, Pods: 500, Seed: 9,
			Mix: []MixEntry{{GPUs: 1, Weight: 1}}, TopologyPolicy: tm, Policies: policies(t, "kubelet")})
		if err != nil {
			t.Fatal(err)
		}
		return res.Policies[0]
	}
	aligned, unaligned := run(TMBestEffort), run(TMNone)
	if n := aligned.ClassCount(topology.SYS); n != 0 {
		t.Errorf("NUMA-aligned kubelet gave %d GPUs a NIC across sockets", n)
	}
	if n := unaligned.ClassCount(topology.SYS); n == 0 {
		t.Errorf("kubelet without Topology Manager never crossed sockets: %v", unaligned.Classes)
	}
}

func TestSameSeedSameResult(t *testing.T) {
	topo := builtin(t, "dgx-a100")
	run := func() *Result {
		res, err := Run(context.Background(), Config{Topology: topo, Nodes: 8, Pods: 800, Seed: 5})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	a, b := run(), run()
	for i := range a.Policies {
		pa, pb := a.Policies[i], b.Policies[i]
		if pa.GDRGPUs != pb.GDRGPUs || pa.GPUs != pb.GPUs || pa.Rejected != pb.Rejected || pa.StrandedMean != pb.StrandedMean {
			t.Errorf("%s: runs differ: %+v vs %+v", pa.Name, pa, pb)
		}
	}
}

func TestBandwidthModelIsApplied(t *testing.T) {
	bw, err := ParseBandwidth("PIX=20,NODE=1,SYS=0.5")
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(context.Background(), Config{Topology: builtin(t, "dgx-h100"), Nodes: 4, Pods: 300, Seed: 1, Bandwidth: bw, GPUsKnown: ptr(1.0),
		Policies: policies(t, "gpu-aware", "kubelet")})
	if err != nil {
		t.Fatal(err)
	}
	ga, kub := res.Policies[0], res.Policies[1]
	if ga.MeanGbps != 20 || ga.GDRFraction != 1 {
		t.Errorf("gpu-aware on dgx-h100: %.2f GB/s, gdr %.3f; want 20 and 1", ga.MeanGbps, ga.GDRFraction)
	}
	want := (20*float64(kub.ClassCount(topology.PIX)) + 1*float64(kub.ClassCount(topology.NODE)) + 0.5*float64(kub.ClassCount(topology.SYS))) / float64(kub.GPUs)
	if d := kub.MeanGbps - want; d > 1e-9 || d < -1e-9 {
		t.Errorf("kubelet mean %.4f GB/s, want %.4f from its class histogram", kub.MeanGbps, want)
	}
}

func TestUnknownGPUsMakeGPUAwareSpread(t *testing.T) {
	zero := 0.0
	res, err := Run(context.Background(), Config{Topology: builtin(t, "dgx-h100"), Nodes: 6, Pods: 600, Seed: 2, GPUsKnown: &zero,
		Policies: policies(t, "gpu-aware", "spread")})
	if err != nil {
		t.Fatal(err)
	}
	if a, b := res.Policies[0], res.Policies[1]; a.GDRGPUs != b.GDRGPUs || a.GPUs != b.GPUs {
		t.Errorf("without GPUs gpu-aware (%d/%d) should match spread (%d/%d)", a.GDRGPUs, a.GPUs, b.GDRGPUs, b.GPUs)
	}
}

// brokenPolicy answers the first offered devices twice: a contract breach.
type brokenPolicy struct{}

func (brokenPolicy) Name() string       { return "broken" }
func (brokenPolicy) Needs() alloc.Needs { return alloc.Needs{} }
func (brokenPolicy) Allocate(req alloc.Request) (alloc.Result, error) {
	out := make([]string, req.Size)
	for i := range out {
		out[i] = req.Available[0]
	}
	return alloc.Result{Devices: out}, nil
}

var _ alloc.Policy = brokenPolicy{}

func TestContractBreachStopsTheRun(t *testing.T) {
	_, err := Run(context.Background(), Config{Topology: builtin(t, "dgx-1"), Nodes: 2, Pods: 50, Seed: 1,
		Mix: []MixEntry{{GPUs: 2, Weight: 1}}, Policies: []Policy{{Name: "broken", Binding: AtAllocate, Alloc: brokenPolicy{}}}})
	if err == nil {
		t.Fatal("a policy answering one device twice went unnoticed")
	}
}

func TestRejectionsWhenDevicesRunOut(t *testing.T) {
	// aws-p4d hands out its 4 EFA PFs whole: an 8-GPU pod asking one device
	// per GPU never fits, a 4-GPU pod does.
	res, err := Run(context.Background(), Config{Topology: builtin(t, "aws-p4d"), Nodes: 3, Pods: 100, Seed: 1,
		Mix: []MixEntry{{GPUs: 8, Weight: 1}}, Policies: policies(t, "spread")})
	if err != nil {
		t.Fatal(err)
	}
	if p := res.Policies[0]; p.Rejections[RejectNoNode] != 100 || p.GPUs != 0 {
		t.Errorf("8-GPU pods on a 4-PF node: %+v, want all rejected", p)
	}
}

func TestCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Run(ctx, Config{Topology: builtin(t, "dgx-1"), Nodes: 10, Pods: 5000})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", err)
	}
}

func TestConfigErrors(t *testing.T) {
	topo := builtin(t, "dgx-1")
	bad := -0.5
	for name, cfg := range map[string]Config{
		"no topology":  {Nodes: 1},
		"no nodes":     {Topology: topo},
		"bad devices":  {Topology: topo, Nodes: 1, Devices: "rail"},
		"bad tm":       {Topology: topo, Nodes: 1, TopologyPolicy: "prefer-closest"},
		"bad sched":    {Topology: topo, Nodes: 1, Scheduler: "random"},
		"bad known":    {Topology: topo, Nodes: 1, GPUsKnown: &bad},
		"zero weights": {Topology: topo, Nodes: 1, Mix: []MixEntry{{GPUs: 1, Weight: 0}}},
		"negative":     {Topology: topo, Nodes: 1, Pods: -1},
		"rechoose":     {Topology: topo, Nodes: 1, RechooseAfter: -1},
		"rechoose inf": {Topology: topo, Nodes: 1, RechooseAfter: math.Inf(1)},
	} {
		if _, err := Run(context.Background(), cfg); !errors.Is(err, ErrConfig) {
			t.Errorf("%s: err %v, want ErrConfig", name, err)
		}
	}
}

func TestWorkloadMatchesMixAndLoad(t *testing.T) {
	cfg, err := Config{Topology: builtin(t, "dgx-1"), Nodes: 100, Pods: 40000, Seed: 4, Mix: []MixEntry{{GPUs: 1, Weight: 3}, {GPUs: 8, Weight: 1}}, Load: 0.5}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	pods := mustWorkload(t, cfg, 8).jobs
	ones, gpuTime := 0, 0.0
	for _, p := range pods {
		if p.gpus == 1 {
			ones++
		}
		if p.devices != p.gpus || p.pods != 1 {
			t.Fatalf("per-GPU mode: pod with %d GPUs asks %d devices, in a job of %d pods", p.gpus, p.devices, p.pods)
		}
		gpuTime += float64(p.gpus) * p.lifetime
	}
	if f := float64(ones) / float64(len(pods)); f < 0.73 || f > 0.77 {
		t.Errorf("1-GPU share %.3f, want about 0.75", f)
	}
	span := pods[len(pods)-1].arrive
	if load := gpuTime / span / 800; load < 0.45 || load > 0.55 {
		t.Errorf("offered load %.3f, want about 0.5", load)
	}
}

func TestRestrictedRejectsOnlyWhenFragmented(t *testing.T) {
	topo := builtin(t, "dgx-1") // 4 GPUs per NUMA node
	run := func(tm TopologyPolicy, load float64) PolicyResult {
		res, err := Run(context.Background(), Config{Topology: topo, Nodes: 4, Pods: 400, Seed: 8,
			Mix: []MixEntry{{GPUs: 1, Weight: 1}, {GPUs: 4, Weight: 1}, {GPUs: 8, Weight: 1}}, TopologyPolicy: tm, Policies: policies(t, "gpu-aware"), Load: load})
		if err != nil {
			t.Fatal(err)
		}
		return res.Policies[0]
	}
	restricted, single := run(TMRestricted, 0.9), run(TMSingleNUMA, 0.9)
	// 8-GPU pods are fine under restricted (two NUMA nodes is the best any
	// node can do) but never under single-numa-node.
	if restricted.Rejections[RejectTopology] >= single.Rejections[RejectTopology] {
		t.Errorf("restricted rejected %d, single-numa-node %d: restricted should reject fewer", restricted.Rejections[RejectTopology], single.Rejections[RejectTopology])
	}
	if restricted.Rejections[RejectTopology] == 0 {
		t.Errorf("restricted never rejected a fragmented 4-GPU pod at 90%% load: %v", restricted.Rejections)
	}
}

// mustWorkload draws cfg's workload for nodes of gpusPerNode GPUs.
func mustWorkload(t *testing.T, cfg Config, gpusPerNode int) workload {
	t.Helper()
	w, err := newWorkload(context.Background(), cfg, gpusPerNode)
	if err != nil {
		t.Fatal(err)
	}
	return w
}
