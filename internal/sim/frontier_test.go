//go:build !race

package sim

import (
	"context"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Frontier scale (issue 9): 12,500 DGX H100 nodes (100,000 GPUs) and
// 1,000,000 pod arrivals, every default policy, under 60 s on this 2-core
// machine.
const frontierNodes, frontierPods = 12_500, 1_000_000

// frontierSUNodes is the scalable unit of the jobs' frontier run: 32
// nodes (256 GPUs) per unit, as in NVIDIA's DGX SuperPOD reference.
const frontierSUNodes = 32

func frontier(tb testing.TB, mix ...MixEntry) *Result {
	tb.Helper()
	topo, err := machineTopologies()
	if err != nil {
		tb.Fatal(err)
	}
	su := 0
	if multiPod(mix) {
		su = frontierSUNodes
	}
	res, err := Run(context.Background(), Config{Topology: topo["dgx-h100"], Machine: "dgx-h100", Nodes: frontierNodes, Pods: frontierPods, Seed: 1, Mix: mix, SUNodes: su})
	if err != nil {
		tb.Fatal(err)
	}
	return res
}

// cpuTime is the process's user plus system time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// loadAverage is the 1-minute load average ("" where unknown).
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	return strings.Fields(string(b))[0]
}

// TestFrontierGoal runs the frontier size once (about 40 s of CPU; skipped
// with -short and under the race detector). The wall-time goal depends on
// what else the shared machine runs, so the test holds the CPU time to
// what two idle cores do in 60 s with a margin for imbalance (100 s) and
// logs the wall time and the load average for BENCHMARKS.md.
func TestFrontierGoal(t *testing.T) {
	if testing.Short() {
		t.Skip("frontier scale: about 40 s of CPU")
	}
	cpu0, start := cpuTime(), time.Now()
	res := frontier(t)
	wall, cpu := time.Since(start), cpuTime()-cpu0
	t.Logf("%d nodes, %d pods, %d events per policy, %d policies: wall %v, CPU %v, load average %s",
		res.Nodes, res.Pods, res.Events, len(res.Policies), wall.Round(time.Millisecond), cpu.Round(time.Millisecond), loadAverage())
	for _, p := range res.Policies {
		t.Logf("%-13s %-8s gdr %.4f rejected %d placed %d  replay %v", p.Name, p.Binding, p.GDRFraction, p.Rejected, p.PodsPlaced, p.Elapsed.Round(time.Millisecond))
		if p.Events != frontierPods+p.PodsPlaced {
			t.Errorf("%s: %d events for %d arrivals and %d departures", p.Name, p.Events, frontierPods, p.PodsPlaced)
		}
	}
	if len(res.Policies) != len(PolicyNames()) {
		t.Errorf("%d policies, want every default one (%d)", len(res.Policies), len(PolicyNames()))
	}
	if cpu > 100*time.Second {
		t.Errorf("CPU time %v: two cores cannot finish in 60 s", cpu)
	}
}

// BenchmarkFrontier is the frontier goal as a benchmark: one op is a whole
// simulation (goal: < 60 s per op on this 2-core machine).
func BenchmarkFrontier(b *testing.B) {
	for b.Loop() {
		cpu0 := cpuTime()
		res := frontier(b)
		b.ReportMetric((cpuTime() - cpu0).Seconds(), "cpu-s/op")
		b.ReportMetric(float64(res.Events), "events/policy")
	}
}

// TestFrontierJobsGoal is the frontier size with jobs of several pods
// (the mix "jobs": single pods and jobs of 2x4, 2x2 and 4x4 GPUs, about
// 1,000,000 pod arrivals) on a fabric of 32-node scalable units, every
// default policy (job-rails among them), held to the same CPU bound.
func TestFrontierJobsGoal(t *testing.T) {
	if testing.Short() {
		t.Skip("frontier scale: about 15 s of CPU")
	}
	cpu0, start := cpuTime(), time.Now()
	res := frontier(t, namedMixes()["jobs"]...)
	wall, cpu := time.Since(start), cpuTime()-cpu0
	t.Logf("%d nodes, %d jobs, %d pods, %d events per policy, %d policies: wall %v, CPU %v, load average %s",
		res.Nodes, res.Jobs, res.Pods, res.Events, len(res.Policies), wall.Round(time.Millisecond), cpu.Round(time.Millisecond), loadAverage())
	for _, p := range res.Policies {
		mp := p.MultiPod
		t.Logf("%-13s %-8s rail-consistent %.3f one leaf %.3f waited %.4f rejected jobs %d  replay %v", p.Name, p.Binding, mp.RailConsistent, mp.OneLeafLayer, mp.Waited, mp.Rejected, p.Elapsed.Round(time.Millisecond))
		if p.Events != res.Pods+p.PodsPlaced {
			t.Errorf("%s: %d events for %d arrivals and %d departures", p.Name, p.Events, res.Pods, p.PodsPlaced)
		}
		if p.Job.OneSet() && mp.RailConsistent != 1 {
			t.Errorf("%s: %.4f of jobs on one rail set", p.Name, mp.RailConsistent)
		}
	}
	if res.Pods < frontierPods || len(res.Policies) != len(PolicyNames()) {
		t.Errorf("%d pods, %d policies; want %d pods, every default policy", res.Pods, len(res.Policies), frontierPods)
	}
	if cpu > 100*time.Second {
		t.Errorf("CPU time %v: two cores cannot finish in 60 s", cpu)
	}
}

// BenchmarkFrontierJobs is TestFrontierJobsGoal as a benchmark (goal:
// < 60 s per op on this 2-core machine).
func BenchmarkFrontierJobs(b *testing.B) {
	for b.Loop() {
		cpu0 := cpuTime()
		res := frontier(b, namedMixes()["jobs"]...)
		b.ReportMetric((cpuTime() - cpu0).Seconds(), "cpu-s/op")
		b.ReportMetric(float64(res.Events), "events/policy")
	}
}
