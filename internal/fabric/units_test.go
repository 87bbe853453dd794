package fabric

import (
	"fmt"
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Layouts of the tests: four DGX SuperPOD scalable units (32 nodes, 8
// rails, a leaf per rail per unit), racks of four nodes with one switch
// each, and both on InfiniBand (switch GUIDs).
var (
	superPOD   = Layout{Design: RailOptimized, Nodes: 128, UnitNodes: 32, Rails: 8}
	superPODIB = Layout{Design: RailOptimized, Nodes: 128, UnitNodes: 32, Rails: 8, InfiniBand: true}
	racks      = Layout{Design: TopOfRack, Nodes: 224, UnitNodes: 4, Rails: 8}
	racksIB    = Layout{Design: TopOfRack, Nodes: 64, UnitNodes: 4, Rails: 8, InfiniBand: true}
)

func generate(t testing.TB, l Layout) []Node {
	t.Helper()
	nodes, err := l.Generate()
	if err != nil {
		t.Fatal(err)
	}
	return nodes
}

// at is a finding's place and kind: what the tests compare.
type at struct {
	Node string
	Rail int
	Kind Kind
}

func places(r Report) []at {
	out := []at{}
	for _, f := range r.Findings {
		out = append(out, at{f.Node, f.Rail, f.Kind})
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Node != b.Node {
			return a.Node < b.Node
		}
		if a.Rail != b.Rail {
			return a.Rail < b.Rail
		}
		return a.Kind < b.Kind
	})
	return out
}

func TestAnalyzeCleanLayouts(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		layout Layout
	}{
		{name: "4 scalable units x 32 nodes x 8 rails", layout: superPOD},
		{name: "4 scalable units on InfiniBand", layout: superPODIB},
		{name: "one unit of 32 nodes", layout: Layout{Design: RailOptimized, Nodes: 32, Rails: 8}},
		{name: "two nodes, one unit", layout: Layout{Design: RailOptimized, Nodes: 2, Rails: 8}},
		{name: "units of 32 nodes, the last one short", layout: Layout{Design: RailOptimized, Nodes: 80, UnitNodes: 32, Rails: 4}},
		{name: "56 racks of 4 nodes, top of rack", layout: racks},
		{name: "16 racks on InfiniBand", layout: racksIB},
		{name: "racks of 1 node", layout: Layout{Design: TopOfRack, Nodes: 6, UnitNodes: 1, Rails: 8}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			l := tc.layout
			rep := Analyze(generate(t, l))
			if diff := cmp.Diff([]at{}, places(rep)); diff != "" {
				t.Errorf("findings on a clean cluster (-want +got):\n%s", diff)
			}
			if rep.Status() != 0 || rep.Design != l.Design || rep.Isolated != (l.Design == RailOptimized) {
				t.Errorf("status %d, design %s, isolated %v; want 0, %s, %v", rep.Status(), rep.Design, rep.Isolated, l.Design, l.Design == RailOptimized)
			}
			want := make([]Unit, l.Units())
			for u := range want {
				want[u] = Unit{Index: u, Design: l.Design, Nodes: []string{}, Leaves: []string{}}
				for r := 0; r < l.Rails; r++ {
					want[u].Rails = append(want[u].Rails, UnitRail{Index: r, Leaf: l.Switch(u, r)})
					if !contains(want[u].Leaves, l.Switch(u, r)) {
						want[u].Leaves = append(want[u].Leaves, l.Switch(u, r))
					}
				}
				sort.Strings(want[u].Leaves)
			}
			for n := 0; n < l.Nodes; n++ {
				u := &want[l.Unit(n)]
				u.Nodes = append(u.Nodes, l.NodeName(n))
			}
			sort.Slice(want, func(i, j int) bool { return want[i].Nodes[0] < want[j].Nodes[0] })
			for i := range want {
				sort.Strings(want[i].Nodes)
				want[i].Index = i + 1
			}
			if diff := cmp.Diff(want, rep.Units); diff != "" {
				t.Errorf("units (-want +got):\n%s", diff)
			}
		})
	}
}

// A fault planted on one node of a clean cluster is reported on that
// node and its rails, as what it is, and nowhere else.
func TestAnalyzeFindsPlantedFaults(t *testing.T) {
	t.Parallel()
	swap := func(name string, a, b int) func([]Node) {
		return func(nodes []Node) {
			p := ports(nodes, name)
			p[a].Switch, p[b].Switch = p[b].Switch, p[a].Switch
		}
	}
	// rotate cables each rail's NIC to the next rail's leaf.
	rotate := func(name string, rails ...int) func([]Node) {
		return func(nodes []Node) {
			p := ports(nodes, name)
			first := p[rails[0]].Switch
			for i, r := range rails[:len(rails)-1] {
				p[r].Switch = p[rails[i+1]].Switch
			}
			p[rails[len(rails)-1]].Switch = first
		}
	}
	set := func(name string, rail int, f func(*Port)) func([]Node) {
		return func(nodes []Node) { f(&ports(nodes, name)[rail]) }
	}
	dark := func(p *Port) { p.Switch, p.SwitchPort, p.NoNeighbor = "", "", "no LLDP frame within 35s" }
	to := func(sw string) func(*Port) { return func(p *Port) { p.Switch = sw } }
	everyNode := func(l Layout, unit, rail int, f func(*Port)) func([]Node) {
		return func(nodes []Node) {
			for n := range nodes {
				if l.Unit(n) == unit {
					f(&nodes[n].Ports[rail])
				}
			}
		}
	}
	all := func(plants ...func([]Node)) func([]Node) {
		return func(nodes []Node) {
			for _, p := range plants {
				p(nodes)
			}
		}
	}
	const n = "su3-node05" // a node of the third unit
	for _, tc := range []struct {
		name   string
		layout Layout
		plant  func([]Node)
		want   []at
		status int
	}{
		{name: "swap inside a unit", layout: superPOD, plant: swap(n, 2, 5),
			want: []at{{n, 2, KindSwap}, {n, 5, KindSwap}}, status: 2},
		{name: "swap on InfiniBand", layout: superPODIB, plant: swap(n, 0, 7),
			want: []at{{n, 0, KindSwap}, {n, 7, KindSwap}}, status: 2},
		{name: "two swaps on one node", layout: superPOD, plant: all(swap(n, 0, 1), swap(n, 6, 7)),
			want: []at{{n, 0, KindSwap}, {n, 1, KindSwap}, {n, 6, KindSwap}, {n, 7, KindSwap}}, status: 2},
		{name: "3-way rotation", layout: superPOD, plant: rotate(n, 1, 2, 3),
			want: []at{{n, 1, KindRotation}, {n, 2, KindRotation}, {n, 3, KindRotation}}, status: 2},
		{name: "4-way rotation out of order", layout: superPOD, plant: rotate(n, 6, 0, 4, 2),
			want: []at{{n, 0, KindRotation}, {n, 2, KindRotation}, {n, 4, KindRotation}, {n, 6, KindRotation}}, status: 2},
		{name: "every rail rotated", layout: superPODIB, plant: rotate(n, 0, 1, 2, 3, 4, 5, 6, 7),
			want: []at{{n, 0, KindRotation}, {n, 1, KindRotation}, {n, 2, KindRotation}, {n, 3, KindRotation},
				{n, 4, KindRotation}, {n, 5, KindRotation}, {n, 6, KindRotation}, {n, 7, KindRotation}}, status: 2},
		{name: "dead cable", layout: superPOD, plant: set(n, 4, dark),
			want: []at{{n, 4, KindDark}}, status: 2},
		{name: "dead cable on InfiniBand", layout: superPODIB, plant: set("su4-node31", 7, dark),
			want: []at{{"su4-node31", 7, KindDark}}, status: 2},
		{name: "another unit's leaf of the same rail", layout: superPOD, plant: set(n, 2, to("su1-leaf2")),
			want: []at{{n, 2, KindOtherUnit}}, status: 1},
		{name: "another unit's leaf of another rail", layout: superPOD, plant: set(n, 2, to("su1-leaf6")),
			want: []at{{n, 2, KindOtherUnit}}, status: 2},
		{name: "a cable on another rail's leaf, not swapped", layout: superPOD, plant: set(n, 5, to("su3-leaf3")),
			want: []at{{n, 5, KindMisplaced}}, status: 2},
		{name: "a switch no peer uses", layout: superPOD, plant: set(n, 3, to("spare-7")),
			want: []at{{n, 3, KindStray}}, status: 1},
		{name: "mixed link rate", layout: superPOD, plant: set(n, 6, func(p *Port) { p.RateGbps = 200 }),
			want: []at{{n, 6, KindRate}}, status: 1},
		{name: "mixed MTU", layout: superPOD, plant: set(n, 0, func(p *Port) { p.MTU = 1500 }),
			want: []at{{n, 0, KindMTU}}, status: 1},
		{name: "a port hearing two switches", layout: superPOD, plant: set(n, 1, func(p *Port) { p.Switches = []string{"su3-leaf1", "rogue"} }),
			want: []at{{n, 1, KindSeveralNeighbors}}, status: 1},
		{name: "a node with no neighbor at all", layout: superPOD, plant: all(set(n, 0, dark), set(n, 1, dark), set(n, 2, dark), set(n, 3, dark),
			set(n, 4, dark), set(n, 5, dark), set(n, 6, dark), set(n, 7, dark)),
			want: []at{{n, -1, KindDarkNode}}, status: 2},
		{name: "a unit's rail without LLDP", layout: superPOD, plant: everyNode(superPOD, 2, 6, dark),
			want: []at{{"", 6, KindDarkRail}}, status: 1},
		{name: "a unit's rail on another rail's leaf", layout: superPOD, plant: everyNode(superPOD, 1, 5, to("su2-leaf4")),
			want: []at{{"", 5, KindSharedLeaf}}, status: 1},
		{name: "three faults in three units", layout: superPOD,
			plant: all(swap(n, 2, 5), set("su1-node00", 7, to("su4-leaf7")), set("su4-node17", 1, dark)),
			want:  []at{{"su1-node00", 7, KindOtherUnit}, {n, 2, KindSwap}, {n, 5, KindSwap}, {"su4-node17", 1, KindDark}}, status: 2},
		{name: "a rack's node on the next rack's switch", layout: racks, plant: set("rack7-node02", 3, to("rack8-tor")),
			want: []at{{"rack7-node02", 3, KindOtherUnit}}, status: 1},
		{name: "a dead cable in a rack", layout: racksIB, plant: set("rack2-node00", 5, dark),
			want: []at{{"rack2-node00", 5, KindDark}}, status: 2},
		{name: "mixed MTU in a rack", layout: racks, plant: set("rack9-node01", 2, func(p *Port) { p.MTU = 1500 }),
			want: []at{{"rack9-node01", 2, KindMTU}}, status: 1},
		{name: "no neighbor anywhere", layout: superPOD, plant: func(nodes []Node) {
			for i := range nodes {
				for j := range nodes[i].Ports {
					dark(&nodes[i].Ports[j])
				}
			}
		}, want: []at{{"", -1, KindNoNeighbors}}, status: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			nodes := generate(t, tc.layout)
			tc.plant(nodes)
			rep := Analyze(nodes)
			if diff := cmp.Diff(tc.want, places(rep)); diff != "" {
				t.Errorf("findings (-want +got):\n%s", diff)
			}
			if rep.Status() != tc.status {
				t.Errorf("status %d, want %d", rep.Status(), tc.status)
			}
			for _, f := range rep.Findings {
				if f.Message == "" || f.Fix == "" || (f.Node != "" && f.Rail >= 0 && f.NIC != fmt.Sprintf("mlx5_%d", f.Rail)) {
					t.Errorf("finding without a message, a fix or its NIC: %+v", f)
				}
			}
			if len(rep.Units) != tc.layout.Units() && tc.want[0].Kind != KindNoNeighbors {
				t.Errorf("%d units, want %d: the fault merged or split units", len(rep.Units), tc.layout.Units())
			}
		})
	}
}

func ports(nodes []Node, name string) []Port {
	for _, n := range nodes {
		if n.Name == name {
			return n.Ports
		}
	}
	panic("no node " + name) // the test's own table names a node that does not exist
}

// Designs beyond the generator's: two switches per rack (rails 0-3 on
// one, 4-7 on the other), and a cluster of rail-optimized units and
// racks side by side.
func TestAnalyzeMixedDesigns(t *testing.T) {
	t.Parallel()
	dualToR := func() []Node {
		nodes := generate(t, Layout{Design: TopOfRack, Nodes: 16, UnitNodes: 4, Rails: 8})
		for i := range nodes {
			for r := 4; r < 8; r++ {
				nodes[i].Ports[r].Switch += "-b"
			}
		}
		return nodes
	}
	sideBySide := func() []Node {
		nodes := generate(t, Layout{Design: RailOptimized, Nodes: 64, UnitNodes: 32, Rails: 8})
		return append(nodes, generate(t, Layout{Design: TopOfRack, Nodes: 16, UnitNodes: 4, Rails: 8})...)
	}
	for _, tc := range []struct {
		name     string
		nodes    func() []Node
		plant    func([]Node)
		design   Design
		units    int
		want     []at
		isolated bool
	}{
		{name: "two switches per rack", nodes: dualToR, design: Mixed, units: 4, want: []at{}},
		{name: "two switches per rack, a cable swapped across them", nodes: dualToR, design: Mixed, units: 4,
			plant: func(n []Node) { p := ports(n, "rack2-node01"); p[0].Switch, p[5].Switch = p[5].Switch, p[0].Switch },
			want:  []at{{"rack2-node01", 0, KindSwap}, {"rack2-node01", 5, KindSwap}}},
		{name: "two switches per rack, a swap within one is harmless", nodes: dualToR, design: Mixed, units: 4,
			plant: func(n []Node) { p := ports(n, "rack2-node01"); p[0].Switch, p[1].Switch = p[1].Switch, p[0].Switch },
			want:  []at{}},
		{name: "scalable units and racks", nodes: sideBySide, design: Mixed, units: 6, want: []at{}},
		{name: "scalable units and racks, a rack's node on a unit's leaf", nodes: sideBySide, design: Mixed, units: 6,
			plant: func(n []Node) { ports(n, "rack3-node00")[6].Switch = "su2-leaf6" },
			want:  []at{{"rack3-node00", 6, KindOtherUnit}}},
		{name: "one switch for every rail of two nodes", design: TopOfRack, units: 1, want: []at{},
			nodes: func() []Node { return generate(t, Layout{Design: TopOfRack, Nodes: 2, Rails: 4}) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			nodes := tc.nodes()
			if tc.plant != nil {
				tc.plant(nodes)
			}
			rep := Analyze(nodes)
			if diff := cmp.Diff(tc.want, places(rep)); diff != "" {
				t.Errorf("findings (-want +got):\n%s", diff)
			}
			if rep.Design != tc.design || len(rep.Units) != tc.units || rep.Isolated != tc.isolated {
				t.Errorf("design %s, %d units, isolated %v; want %s, %d, %v", rep.Design, len(rep.Units), rep.Isolated, tc.design, tc.units, tc.isolated)
			}
		})
	}
}

// Whatever the ports say, Analyze neither panics nor names a node that
// does not exist, and every node is in at most one unit.
func FuzzAnalyze(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0, 1, 1, 1, 0, 1, 1, 1, 1, 2, 0, 2, 2})
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 1})
	f.Fuzz(func(t *testing.T, b []byte) {
		var nodes []Node
		for i := 0; i+3 < len(b) && i < 4*512; i += 4 {
			n := int(b[i] % 16)
			for len(nodes) <= n {
				nodes = append(nodes, Node{Name: fmt.Sprintf("n%02d", len(nodes))})
			}
			p := Port{Rail: int(b[i+1]%10) - 1, NIC: fmt.Sprintf("mlx5_%d", b[i+1]%10), RateGbps: float64(b[i+3] % 3 * 100)}
			if s := b[i+2] % 12; s > 0 {
				p.Switch = fmt.Sprintf("sw%d", s)
			}
			switch {
			case b[i+3]&0x80 != 0:
				p.Switches = []string{p.Switch, "sw-other"}
			case b[i+3]&0x40 != 0: // two ports of one switch, a port list shorter than the switches
				p.Switches, p.SwitchPorts = []string{p.Switch, p.Switch, p.Switch}, []string{"p1", "p2"}
			}
			nodes[n].Ports = append(nodes[n].Ports, p)
		}
		rep := Analyze(nodes)
		known := map[string]bool{"": true}
		for _, n := range rep.Nodes {
			known[n] = true
		}
		for _, f := range rep.Findings {
			if !known[f.Node] || f.Message == "" || f.Fix == "" {
				t.Errorf("finding %+v", f)
			}
		}
		seen := map[string]bool{}
		for _, u := range rep.Units {
			for _, n := range u.Nodes {
				if seen[n] {
					t.Errorf("node %s in two units", n)
				}
				seen[n] = true
			}
		}
		if s := rep.Status(); s < 0 || s > 2 {
			t.Errorf("status %d", s)
		}
	})
}
