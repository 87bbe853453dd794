package fabric

import "testing"

// BenchmarkAnalyze10000Nodes8Rails judges a rail-optimized cluster of
// 10,000 nodes (313 scalable units of 32, 8 rails) with one swapped
// cable: the goal is under 2 s (BENCHMARKS.md).
func BenchmarkAnalyze10000Nodes8Rails(b *testing.B) {
	l := Layout{Design: RailOptimized, Nodes: 10000, UnitNodes: 32, Rails: 8}
	nodes := generate(b, l)
	p := nodes[4321].Ports
	p[2].Switch, p[5].Switch = p[5].Switch, p[2].Switch
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		rep := Analyze(nodes)
		if len(rep.Units) != l.Units() || len(rep.Findings) != 2 {
			b.Fatalf("%d units, findings %+v; want %d units and the swap", len(rep.Units), rep.Findings, l.Units())
		}
	}
}
