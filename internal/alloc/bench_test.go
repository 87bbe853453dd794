//go:build linux

package alloc

import (
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/railyard-io/railyard/internal/topology"
)

// bigNode is an 8-GPU node whose 8 NICs (one per GPU switch, four per NUMA
// node) carry 256 VFs each: 2048 free VFs.
func bigNode() *topology.Topology {
	var hbs []hbSpec
	for h := 0; h < 8; h++ {
		hbs = append(hbs, hbSpec{numa: h / 4, switches: []switchSpec{{gpus: 1, nics: 1}}})
	}
	return buildTopology(hbs, nicOpts{vfs: 256, vfPorts: true})
}

func bigRequest(topo *topology.Topology) Request {
	var gpus []string
	for _, g := range topo.GPUs {
		gpus = append(gpus, g.PCI)
	}
	return Request{Topology: topo, Available: vfs(topo), Size: 8, GPUs: gpus}
}

func percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, int(q*float64(len(sorted))))]
}

// BenchmarkDecision2048VFs measures one decision for an 8-GPU pod on a node
// with 2048 free VFs, per policy, and reports p50 and p99 in microseconds,
// of wall time and of the thread's CPU time (which other processes on a
// busy machine cannot inflate).
func BenchmarkDecision2048VFs(b *testing.B) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	topo := bigNode()
	req := bigRequest(topo)
	if len(req.Available) != 2048 {
		b.Fatalf("%d VFs", len(req.Available))
	}
	for _, p := range allPolicies(b) {
		b.Run(p.Name(), func(b *testing.B) {
			if _, err := p.Allocate(req); err != nil {
				b.Fatal(err)
			}
			var wall, cpu []time.Duration
			for b.Loop() {
				start, c0 := time.Now(), threadCPU(b)
				if _, err := p.Allocate(req); err != nil {
					b.Fatal(err)
				}
				cpu = append(cpu, threadCPU(b)-c0)
				wall = append(wall, time.Since(start))
			}
			slices.Sort(wall)
			slices.Sort(cpu)
			us := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }
			b.ReportMetric(us(percentile(wall, 0.50)), "p50-us")
			b.ReportMetric(us(percentile(wall, 0.99)), "p99-us")
			b.ReportMetric(us(percentile(cpu, 0.99)), "cpu-p99-us")
		})
	}
}

// BenchmarkNewIndex2048VFs measures the once-per-topology precomputation.
func BenchmarkNewIndex2048VFs(b *testing.B) {
	topo := bigNode()
	for b.Loop() {
		NewIndex(topo)
	}
}
