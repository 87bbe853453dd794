package sim

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/railyard-io/railyard/internal/fabric"
)

// The simulator's scalable units are package fabric's: the cluster it
// simulates, generated as a publisher would report it, is judged by
// fabric.Analyze as clean, rail-optimized, with each node in the unit
// the simulator places it in.
func TestSimulatedUnitsAreTheFabricsUnits(t *testing.T) {
	t.Parallel()
	for _, cfg := range []Config{{Nodes: 24, SUNodes: 5}, {Nodes: 64, SUNodes: 32}, {Nodes: 10}} {
		l := cfg.units()
		l.Rails = 8
		nodes, err := l.Generate()
		if err != nil {
			t.Fatal(err)
		}
		rep := fabric.Analyze(nodes)
		if len(rep.Findings) != 0 || rep.Design != fabric.RailOptimized {
			t.Fatalf("%+v: design %s, findings %+v; want rail-optimized, none", cfg, rep.Design, rep.Findings)
		}
		got := map[string]int{}
		for _, u := range rep.Units {
			for _, n := range u.Nodes {
				got[n] = u.Index - 1
			}
		}
		want := map[string]int{}
		r := &runner{cfg: &cfg, units: cfg.units()}
		for n := 0; n < cfg.Nodes; n++ {
			want[l.NodeName(n)] = r.unit(n)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%+v: units (-simulator +fabric):\n%s", cfg, diff)
		}
	}
}
