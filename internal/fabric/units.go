package fabric

import (
	"sort"
)

// maxPairLeaves bounds the switches of one node whose pairs are counted
// when grouping leaves into units: a GPU node has a few rails, and a
// node whose annotation lists hundreds of switches must not cost their
// square.
const maxPairLeaves = 64

// model is what Analyze learns from the ports: the switches they hear,
// the units (groups of nodes cabled to the same leaves), which unit owns
// each switch, and each unit's leaf per rail.
type model struct {
	nodes    []Node
	all      []*portAt   // every port, with a rail or without (firmware)
	byNode   [][]*portAt // per node, its ports with a rail
	rails    []int       // the rail indexes present, ascending
	switches []string    // interned switch names; portAt.sw indexes it
	heard    bool        // some rail port has a neighbor
	anyRail  bool        // some node has a rail port
	nodeUnit []int       // per node, its unit (index into units) or -1
	owner    []int       // per switch, the unit owning it or -1
	units    []*unit
	design   Design
}

// unit is one group of nodes and what they share.
type unit struct {
	index  int     // from 1, in the order of the units' first nodes
	nodes  []int   // indexes into model.nodes, ascending
	leaves []int32 // the switches it owns
	rails  []int   // the rail indexes of its nodes' ports, ascending
	// ports holds, per rail, its nodes' ports on that rail.
	ports map[int][]*portAt
	// leafOf is each rail's leaf (noSwitch when none of the unit's
	// switches is reached on it); railsOf, each leaf's rails, ascending.
	leafOf  map[int]int32
	railsOf map[int32][]int
	design  Design
}

// newModel interns the ports' switches, groups the nodes into units and
// decides each unit's leaves and design.
func newModel(nodes []Node) *model {
	m := &model{nodes: nodes, byNode: make([][]*portAt, len(nodes))}
	ids := map[string]int32{}
	seenRail := map[int]bool{}
	for ni := range nodes {
		n := &nodes[ni]
		for pi := range n.Ports {
			p := &portAt{node: ni, name: n.Name, sw: noSwitch, Port: &n.Ports[pi]}
			m.all = append(m.all, p)
			if p.Rail < 0 {
				continue
			}
			m.anyRail = true
			if !seenRail[p.Rail] {
				seenRail[p.Rail] = true
				m.rails = append(m.rails, p.Rail)
			}
			name, n := p.Switch, 1
			if len(p.Switches) > 0 || name == "" {
				nb := p.neighbors()
				if n = len(nb); n == 1 {
					name = nb[0]
				}
			}
			switch n {
			case 0:
			case 1:
				id, ok := ids[name]
				if !ok {
					id = int32(len(m.switches))
					ids[name] = id
					m.switches = append(m.switches, name)
				}
				p.sw = id
				m.heard = true
			default:
				p.sw = several
				m.heard = true
			}
			m.byNode[ni] = append(m.byNode[ni], p)
		}
	}
	sort.Ints(m.rails)
	m.group()
	for _, u := range m.units {
		m.decide(u)
	}
	m.design = Unknown
	for _, u := range m.units {
		switch {
		case u.design == Unknown:
		case m.design == Unknown:
			m.design = u.design
		case m.design != u.design:
			m.design = Mixed
		}
	}
	return m
}

// group finds the units. Two switches belong together when more than
// half of the nodes of the smaller one also reach the other (union-find
// over those pairs): the leaves of one scalable unit share all its nodes,
// racks' switches share none, and one cable into another unit's leaf
// shares one node, too few to merge two units. A node then belongs to
// the group most of its ports reach (ties: the group seen first), and a
// switch to the unit of more than half of its ports' nodes (else none).
func (m *model) group() {
	ns := len(m.switches)
	parent := make([]int32, ns)
	for i := range parent {
		parent[i] = int32(i)
	}
	find := func(x int32) int32 {
		for parent[x] != x {
			parent[x] = parent[parent[x]]
			x = parent[x]
		}
		return x
	}
	deg := make([]int32, ns)
	pairs := map[uint64]int32{}
	var sws []int32
	for _, ports := range m.byNode {
		sws = distinctSwitches(ports, sws[:0])
		for _, s := range sws {
			deg[s]++
		}
		if len(sws) > maxPairLeaves {
			sws = sws[:maxPairLeaves]
		}
		for i, a := range sws {
			for _, b := range sws[i+1:] {
				lo, hi := min(a, b), max(a, b)
				pairs[uint64(lo)<<32|uint64(hi)]++
			}
		}
	}
	for k, c := range pairs {
		a, b := int32(k>>32), int32(k&0xffffffff)
		if 2*c > min(deg[a], deg[b]) {
			if ra, rb := find(a), find(b); ra != rb {
				parent[max(ra, rb)] = min(ra, rb)
			}
		}
	}

	// Each node joins the group most of its ports reach; groups become
	// units in the order of their first node.
	unitOfGroup := map[int32]int{}
	m.nodeUnit = make([]int, len(m.nodes))
	count := map[int32]int{}
	for ni, ports := range m.byNode {
		m.nodeUnit[ni] = -1
		clear(count)
		best, bestN := int32(-1), 0
		for _, p := range ports {
			if p.sw < 0 {
				continue
			}
			g := find(p.sw)
			count[g]++
			if c := count[g]; c > bestN || (c == bestN && g < best) {
				best, bestN = g, c
			}
		}
		if best < 0 {
			continue
		}
		ui, ok := unitOfGroup[best]
		if !ok {
			ui = len(m.units)
			unitOfGroup[best] = ui
			m.units = append(m.units, &unit{index: ui + 1, ports: map[int][]*portAt{}, leafOf: map[int]int32{}, railsOf: map[int32][]int{}})
		}
		m.nodeUnit[ni] = ui
		m.units[ui].nodes = append(m.units[ui].nodes, ni)
	}

	// A switch belongs to the unit of more than half of its ports.
	type tally struct {
		unit, n int
	}
	perSwitch := make([][]tally, ns)
	total := make([]int, ns)
	for ni, ports := range m.byNode {
		u := m.nodeUnit[ni]
		for _, p := range ports {
			if p.sw < 0 {
				continue
			}
			total[p.sw]++
			t := perSwitch[p.sw]
			i := 0
			for i < len(t) && t[i].unit != u {
				i++
			}
			if i == len(t) {
				t = append(t, tally{unit: u})
			}
			t[i].n++
			perSwitch[p.sw] = t
		}
	}
	m.owner = make([]int, ns)
	for s := range m.owner {
		m.owner[s] = -1
		for _, t := range perSwitch[s] {
			if 2*t.n > total[s] {
				m.owner[s] = t.unit
				m.units[t.unit].leaves = append(m.units[t.unit].leaves, int32(s))
			}
		}
	}
	for _, u := range m.units {
		sort.Slice(u.leaves, func(i, j int) bool { return m.switches[u.leaves[i]] < m.switches[u.leaves[j]] })
	}
}

// distinctSwitches appends to out the distinct switches the ports reach.
func distinctSwitches(ports []*portAt, out []int32) []int32 {
	for _, p := range ports {
		if p.sw < 0 {
			continue
		}
		dup := false
		for _, s := range out {
			dup = dup || s == p.sw
		}
		if !dup {
			out = append(out, p.sw)
		}
	}
	return out
}

// decide gives each rail of the unit its leaf and the unit its design.
// A switch of the unit that more than half of the rail's ports with a
// neighbor reach is that rail's leaf, even when it is also another
// rail's (one switch for several rails: a rack). A rail without such a
// switch (two nodes with a cable swapped disagree one to one) takes, in
// rail order, its most common switch of the unit that no other rail has
// taken, so a swap is reported on one side instead of two rails sharing
// a leaf. Switches of other units are never a unit's leaf.
func (m *model) decide(u *unit) {
	for _, ni := range u.nodes {
		for _, p := range m.byNode[ni] {
			if _, ok := u.ports[p.Rail]; !ok {
				u.rails = append(u.rails, p.Rail)
			}
			u.ports[p.Rail] = append(u.ports[p.Rail], p)
		}
	}
	sort.Ints(u.rails)
	own := func(p *portAt) bool { return p.sw >= 0 && m.owner[p.sw] == u.index-1 }
	taken := map[int32]bool{}
	var pending []int
	for _, r := range u.rails {
		leaf, n, known := m.top(u.ports[r], own, nil)
		if leaf != noSwitch && 2*n > known {
			u.leafOf[r] = leaf
			taken[leaf] = true
			continue
		}
		pending = append(pending, r)
	}
	for _, r := range pending {
		leaf, _, _ := m.top(u.ports[r], own, taken)
		if leaf == noSwitch {
			leaf, _, _ = m.top(u.ports[r], own, nil)
		}
		u.leafOf[r] = leaf
		if leaf != noSwitch {
			taken[leaf] = true
		}
	}
	var withLeaf []int
	for _, r := range u.rails {
		if l := u.leafOf[r]; l != noSwitch {
			u.railsOf[l] = append(u.railsOf[l], r)
			withLeaf = append(withLeaf, r)
		}
	}
	alone := 0
	for _, r := range withLeaf {
		if len(u.railsOf[u.leafOf[r]]) == 1 {
			alone++
		}
	}
	switch {
	case len(withLeaf) == 0:
		u.design = Unknown
	case len(withLeaf) >= 2 && len(u.railsOf) == 1:
		u.design = TopOfRack
	case 2*alone > len(withLeaf):
		u.design = RailOptimized
	default:
		u.design = Mixed
	}
}

// top returns the most common switch among the ports for which ok holds,
// skipping those in skip (ties: the smallest name), how many ports reach
// it, and how many ports have a neighbor (one switch, ok or not).
func (m *model) top(ports []*portAt, ok func(*portAt) bool, skip map[int32]bool) (int32, int, int) {
	count := map[int32]int{}
	known := 0
	for _, p := range ports {
		if p.sw < 0 {
			continue
		}
		known++
		if ok(p) && !skip[p.sw] {
			count[p.sw]++
		}
	}
	best, bestN := noSwitch, 0
	for s, c := range count {
		if best == noSwitch || c > bestN || (c == bestN && m.switches[s] < m.switches[best]) {
			best, bestN = s, c
		}
	}
	return best, bestN, known
}

// isolated reports whether the cluster is rail-optimized with a leaf of
// its own for every rail of every unit.
func (m *model) isolated() bool {
	if m.design != RailOptimized {
		return false
	}
	for _, u := range m.units {
		for _, rails := range u.railsOf {
			if len(rails) > 1 {
				return false
			}
		}
	}
	return true
}

// matrix is the rail x node matrix, each rail's leaf when all units agree.
func (m *model) matrix() []Rail {
	out := make([]Rail, 0, len(m.rails))
	at := map[int]int{}
	for _, r := range m.rails {
		at[r] = len(out)
		rail := Rail{Index: r, Switches: make([]string, len(m.nodes))}
		for i := range rail.Switches {
			rail.Switches[i] = "-"
		}
		leaf, agree := noSwitch, len(m.units) > 0
		for _, u := range m.units {
			l, ok := u.leafOf[r]
			switch {
			case !ok:
			case l == noSwitch || (leaf != noSwitch && l != leaf):
				agree = false
			default:
				leaf = l
			}
		}
		if agree && leaf != noSwitch {
			rail.Leaf = m.switches[leaf]
		}
		out = append(out, rail)
	}
	for ni, ports := range m.byNode {
		for _, p := range ports {
			cell := ""
			switch {
			case p.sw >= 0:
				cell = m.switches[p.sw]
			case p.sw == several:
				cell = joinBar(p.neighbors())
			}
			out[at[p.Rail]].Switches[ni] = cell
		}
	}
	return out
}

// report is the units as the Report gives them.
func (m *model) report() []Unit {
	out := make([]Unit, 0, len(m.units))
	for _, u := range m.units {
		ru := Unit{Index: u.index, Design: u.design, Nodes: make([]string, 0, len(u.nodes)), Leaves: make([]string, 0, len(u.leaves))}
		for _, ni := range u.nodes {
			ru.Nodes = append(ru.Nodes, m.nodes[ni].Name)
		}
		for _, l := range u.leaves {
			ru.Leaves = append(ru.Leaves, m.switches[l])
		}
		for _, r := range u.rails {
			ru.Rails = append(ru.Rails, UnitRail{Index: r, Leaf: m.name(u.leafOf[r])})
		}
		out = append(out, ru)
	}
	return out
}

// name is a switch's name, "" for none.
func (m *model) name(s int32) string {
	if s < 0 {
		return ""
	}
	return m.switches[s]
}

func joinBar(v []string) string {
	out := ""
	for i, s := range v {
		if i > 0 {
			out += "|"
		}
		out += s
	}
	return out
}
