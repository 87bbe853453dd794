package fabric

import (
	"fmt"
	"sort"
	"strings"
)

// Fixes shared by several findings.
const (
	darkFix = "check the cable and the switch port; on ConnectX, the firmware may consume LLDP (mlxconfig LLDP_NB_RX_MODE)"
	lldpFix = "make the ports hear their switches: LLDP sent by the switches (RoCE), the fabric DaemonSet's publisher " +
		"running on the nodes (railyard fabric publish --dry-run on a node prints what it hears; on ConnectX the firmware " +
		"may consume LLDP: mlxconfig LLDP_NB_RX_MODE), infiniband-diags for InfiniBand ports (chart: fabric.infiniband.enabled)"
)

// judge finds what disagrees with each unit's design: per node its
// ports against its unit's leaves, per unit its rails, and per rail of
// each unit mixed link rates and MTUs. Findings are sorted by node, rail
// and NIC; those about a unit or the cluster (no node) come first.
func (m *model) judge() []Finding {
	var out []Finding
	if m.anyRail && !m.heard {
		out = append(out, m.noNeighbors())
	}
	for _, u := range m.units {
		out = append(out, m.sharedLeaves(u)...)
		out = append(out, m.darkRails(u)...)
	}
	for ni := range m.nodes {
		out = append(out, m.node(ni)...)
	}
	out = append(out, m.mixed()...)
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Node != b.Node {
			return a.Node < b.Node
		}
		if a.Rail != b.Rail {
			return a.Rail < b.Rail
		}
		return a.NIC < b.NIC
	})
	return out
}

// noNeighbors is the one finding when no rail port has a neighbor: the
// wiring cannot be judged, and no advice is drawn from it.
func (m *model) noNeighbors() Finding {
	reasons := map[string]int{}
	total := 0
	for _, ports := range m.byNode {
		for _, p := range ports {
			total++
			why := p.NoNeighbor
			if why == "" {
				why = "no reason given"
			}
			reasons[why]++
		}
	}
	common, n := "", 0
	for r, c := range reasons {
		if c > n || (c == n && r < common) {
			common, n = r, c
		}
	}
	return Finding{Severity: Warn, Kind: KindNoNeighbors, Node: "", Rail: -1,
		Message: fmt.Sprintf("no rail NIC of the %d nodes has a neighbor (%d of %d say: %s): the wiring, its units and its design cannot be judged",
			len(m.nodes), n, total, common),
		Fix: lldpFix}
}

// sharedLeaves reports, in a rail-optimized unit, each rail whose leaf
// is another rail's: one switch carrying two whole rails. The rail with
// the most ports on the switch is its own; the others are reported.
func (m *model) sharedLeaves(u *unit) []Finding {
	if u.design != RailOptimized {
		return nil
	}
	var out []Finding
	for _, leaf := range u.leaves {
		rails := u.railsOf[leaf]
		if len(rails) < 2 {
			continue
		}
		count := func(r int) int {
			n := 0
			for _, p := range u.ports[r] {
				if p.sw == leaf {
					n++
				}
			}
			return n
		}
		own := rails[0]
		for _, r := range rails[1:] {
			if count(r) > count(own) {
				own = r
			}
		}
		name := m.switches[leaf]
		for _, r := range rails {
			if r == own {
				continue
			}
			out = append(out, Finding{Severity: Warn, Kind: KindSharedLeaf, Rail: r, Switch: name,
				Message: fmt.Sprintf("unit %d is rail-optimized, but %s is the leaf of rails %s: rail %d's NICs are on rail %d's leaf", u.index, name, ints(rails), r, own),
				Fix: fmt.Sprintf("cable rail %d of unit %d's nodes to a leaf of its own, as its other rails are (if %s is meant to carry both rails, nothing: they then meet without the spine)",
					r, u.index, name)})
		}
	}
	return out
}

// darkRails reports a rail on which no node of a unit (of two nodes or
// more) has a neighbor: its leaf, not each cable.
func (m *model) darkRails(u *unit) []Finding {
	var out []Finding
	for _, r := range u.rails {
		ports := u.ports[r]
		if len(ports) < 2 || heardOn(ports) {
			continue
		}
		out = append(out, Finding{Severity: Warn, Kind: KindDarkRail, Rail: r,
			Message: fmt.Sprintf("no NIC on rail %d of unit %d's %d nodes has a neighbor (%s), while their other rails do: the rail's leaf sends no LLDP, or is down",
				r, u.index, len(u.nodes), orDash(ports[0].NoNeighbor)),
			Fix: fmt.Sprintf("check unit %d's leaf of rail %d: powered, cabled, sending LLDP on its ports; %s", u.index, r, darkFix)})
	}
	return out
}

// heardOn reports whether a port has a neighbor.
func heardOn(ports []*portAt) bool {
	for _, p := range ports {
		if p.sw != noSwitch {
			return true
		}
	}
	return false
}

// node judges one node's ports against its unit.
func (m *model) node(ni int) []Finding {
	ports := m.byNode[ni]
	var out []Finding
	for _, p := range ports {
		if heard := p.HeardNeighbors(); len(heard) > 1 {
			judged := "its wiring is not judged"
			if p.sw >= 0 {
				judged = "all on " + m.switches[p.sw] + ", its wiring judged as cabled to it"
			}
			out = append(out, Finding{Severity: Warn, Kind: KindSeveralNeighbors, Node: p.name, Rail: p.Rail, NIC: p.NIC,
				Message: fmt.Sprintf("rail %d NIC %s hears %d neighbors (%s): %s", p.Rail, p.NIC, len(heard), strings.Join(heard, ", "), judged),
				Fix:     "one cable from the NIC to one leaf port: look for a switch or a hub between them, or a second device sending LLDP on the link"})
		}
	}
	ui := m.nodeUnit[ni]
	if ui < 0 {
		if m.heard && len(ports) > 0 && !heardOn(ports) {
			out = append(out, m.darkNode(ni))
		}
		return out
	}
	u := m.units[ui]
	var misplaced []*portAt
	for _, p := range ports {
		leaf := u.leafOf[p.Rail]
		switch {
		case p.sw == noSwitch:
			if f, ok := m.dark(u, p); ok {
				out = append(out, f)
			}
		case p.sw == several || p.sw == leaf:
		case m.owner[p.sw] >= 0 && m.owner[p.sw] != ui:
			out = append(out, m.otherUnit(u, p))
		case m.owner[p.sw] == ui && len(u.railsOf[p.sw]) > 0:
			misplaced = append(misplaced, p)
		default:
			out = append(out, Finding{Severity: Warn, Kind: KindStray, Node: p.name, Rail: p.Rail, NIC: p.NIC, Switch: m.switches[p.sw],
				Message: fmt.Sprintf("rail %d NIC %s reaches %s, which no peer on rail %d uses (they reach %s)", p.Rail, p.NIC, m.switches[p.sw], p.Rail, orDash(m.name(leaf))),
				Fix:     "the node is missing from the leaf its peers share: recable it, or check that the leaf joins the rail's fabric"})
		}
	}
	return append(out, m.cycles(u, misplaced)...)
}

// darkNode is the one finding for a node none of whose rail ports has a
// neighbor while other nodes' have: the node, not each cable.
func (m *model) darkNode(ni int) Finding {
	var why []string
	for _, p := range m.byNode[ni] {
		w := p.NoNeighbor
		if w == "" {
			w = "no reason given"
		}
		if !contains(why, w) && len(why) < 3 {
			why = append(why, w)
		}
	}
	return Finding{Severity: Fail, Kind: KindDarkNode, Node: m.nodes[ni].Name, Rail: -1,
		Message: fmt.Sprintf("none of the node's %d rail NICs has a neighbor (%s) while other nodes' do", len(m.byNode[ni]), strings.Join(why, "; ")),
		Fix:     "check that the node's publisher hears LLDP (railyard fabric publish --dry-run on the node) and its cables; " + darkFix}
}

// dark judges a port without a neighbor: a failure when its unit's
// peers on the rail have one, or, the only port of its unit on the
// rail, when the node's other rails have; a rail dark across the unit
// is reported once (darkRails).
func (m *model) dark(u *unit, p *portAt) (Finding, bool) {
	why := p.NoNeighbor
	if why == "" {
		why = "no neighbor reported"
	}
	f := Finding{Severity: Fail, Kind: KindDark, Node: p.name, Rail: p.Rail, NIC: p.NIC, Fix: darkFix}
	switch peers := u.ports[p.Rail]; {
	case heardOn(peers):
		f.Message = fmt.Sprintf("rail %d NIC %s has no neighbor (%s) while its peers reach %s", p.Rail, p.NIC, why, orDash(m.name(u.leafOf[p.Rail])))
	case len(peers) == 1:
		f.Message = fmt.Sprintf("rail %d NIC %s has no neighbor (%s) while the node's other rails have", p.Rail, p.NIC, why)
	default:
		return Finding{}, false
	}
	return f, true
}

// otherUnit judges a port cabled to a leaf of another unit: it works
// through the spine, but is not where its unit is (a warning); on
// another rail's leaf there, a failure.
func (m *model) otherUnit(u *unit, p *portAt) Finding {
	v := m.units[m.owner[p.sw]]
	name, want := m.switches[p.sw], orDash(m.name(u.leafOf[p.Rail]))
	f := Finding{Severity: Warn, Kind: KindOtherUnit, Node: p.name, Rail: p.Rail, NIC: p.NIC, Switch: name,
		Fix: fmt.Sprintf("move %s's cable to %s, where the rest of unit %d's rail %d is", p.NIC, want, u.index, p.Rail)}
	rails := v.railsOf[p.sw]
	switch {
	case contains1(rails, p.Rail):
		f.Message = fmt.Sprintf("rail %d NIC %s reaches %s (port %s), unit %d's leaf of rail %d; the node is in unit %d, whose rail %d is on %s: its traffic to its unit crosses the spine",
			p.Rail, p.NIC, name, orDash(p.SwitchPort), v.index, p.Rail, u.index, p.Rail, want)
	default:
		f.Severity = Fail
		what := "a switch of unit " + fmt.Sprint(v.index)
		if len(rails) > 0 {
			what = fmt.Sprintf("unit %d's leaf of rail %s", v.index, ints(rails))
		}
		f.Message = fmt.Sprintf("rail %d NIC %s reaches %s (port %s), %s; the node is in unit %d, whose rail %d is on %s",
			p.Rail, p.NIC, name, orDash(p.SwitchPort), what, u.index, p.Rail, want)
	}
	return f
}

func contains1(v []int, x int) bool {
	for _, y := range v {
		if y == x {
			return true
		}
	}
	return false
}

// cycles judges one node's ports cabled to another rail's leaf of its
// unit. Each such port points at a port of the rail whose leaf it
// reaches (one that is misplaced too, preferring one that reaches this
// port's leaf back, each pointed at once); ports that point around in a
// circle of two are a swap, of three or more a rotation, and the rest
// are misplaced one by one.
func (m *model) cycles(u *unit, ports []*portAt) []Finding {
	next := make([]int, len(ports))
	used := make([]bool, len(ports))
	for i, a := range ports {
		next[i] = -1
		for _, back := range []bool{true, false} {
			for j, b := range ports {
				if j == i || used[j] || u.leafOf[b.Rail] != a.sw || (back && b.sw != u.leafOf[a.Rail]) {
					continue
				}
				next[i], used[j] = j, true
				break
			}
			if next[i] >= 0 {
				break
			}
		}
	}
	var out []Finding
	for i, p := range ports {
		cycle := []int{i}
		for j := next[i]; j >= 0 && j != i && len(cycle) <= len(ports); j = next[j] {
			cycle = append(cycle, j)
		}
		closed := len(cycle) > 1 && next[cycle[len(cycle)-1]] == i
		leaf, here := orDash(m.name(u.leafOf[p.Rail])), m.switches[p.sw]
		f := Finding{Severity: Fail, Node: p.name, Rail: p.Rail, NIC: p.NIC, Switch: here}
		reach := fmt.Sprintf("rail %d NIC %s reaches %s (port %s), the leaf of rail %s in unit %d", p.Rail, p.NIC, here, orDash(p.SwitchPort), ints(u.railsOf[p.sw]), u.index)
		switch {
		case closed && len(cycle) == 2:
			q := ports[cycle[1]]
			f.Kind = KindSwap
			f.Message = fmt.Sprintf("%s, and rail %d NIC %s reaches %s, the leaf of rail %s: the two cables are swapped",
				reach, q.Rail, q.NIC, m.switches[q.sw], ints(u.railsOf[q.sw]))
			f.Fix = fmt.Sprintf("a swapped cable: move %s's cable to %s and %s's to %s (NCCL rings across nodes then meet on the same leaf)",
				p.NIC, leaf, q.NIC, orDash(m.name(u.leafOf[q.Rail])))
		case closed:
			first := 0 // the circle from its smallest rail, the same on each of its ports
			for k, j := range cycle {
				if ports[j].Rail < ports[cycle[first]].Rail {
					first = k
				}
			}
			order := make([]string, 0, len(cycle)+1)
			for k := range len(cycle) + 1 {
				order = append(order, fmt.Sprint(ports[cycle[(first+k)%len(cycle)]].Rail))
			}
			f.Kind = KindRotation
			f.Message = fmt.Sprintf("%s: one of %d cables rotated among rails %s (each NIC on the next rail's leaf)", reach, len(cycle), strings.Join(order, "->"))
			f.Fix = fmt.Sprintf("move %s's cable to %s, and each other rotated cable to its own rail's leaf", p.NIC, leaf)
		default:
			f.Kind = KindMisplaced
			f.Message = fmt.Sprintf("%s; rail %d's leaf is %s", reach, p.Rail, leaf)
			f.Fix = fmt.Sprintf("move %s's cable to %s (NCCL rings across nodes meet on the rail's leaf)", p.NIC, leaf)
		}
		out = append(out, f)
	}
	return out
}

// mixed warns, per port in the minority of its unit's rail, of a link
// rate or MTU that differs from its peers'; nodes of no unit are
// compared among themselves.
func (m *model) mixed() []Finding {
	type key struct{ unit, rail int }
	groups := map[key][]*portAt{}
	var keys []key
	for ni, ports := range m.byNode {
		for _, p := range ports {
			k := key{m.nodeUnit[ni], p.Rail}
			if _, ok := groups[k]; !ok {
				keys = append(keys, k)
			}
			groups[k] = append(groups[k], p)
		}
	}
	checks := []struct {
		kind  Kind
		what  string
		value func(*portAt) string
	}{
		{kind: KindRate, what: "link rate", value: func(p *portAt) string { return num(p.RateGbps, " Gb/s") }},
		{kind: KindMTU, what: "MTU", value: func(p *portAt) string { return num(float64(p.MTU), "") }},
	}
	var out []Finding
	for _, k := range keys {
		for _, c := range checks {
			odd, common, _, _ := minority(groups[k], c.value)
			for _, p := range odd {
				out = append(out, Finding{Severity: Warn, Kind: c.kind, Node: p.name, Rail: p.Rail, NIC: p.NIC,
					Message: fmt.Sprintf("rail %d NIC %s has %s %s; its peers have %s", p.Rail, p.NIC, c.what, c.value(p), common),
					Fix:     fmt.Sprintf("one %s per rail: a slower or smaller port limits every ring through it", c.what)})
			}
		}
	}
	return out
}

// minority returns the ports whose value is known (non-empty) and differs
// from the most common one (majority: ties go to the smallest), with that
// value, how many ports have it and how many have a known value.
func minority(ports []*portAt, value func(*portAt) string) (odd []*portAt, common string, n, known int) {
	count := map[string]int{}
	values := make([]string, len(ports))
	for i, p := range ports {
		if v := value(p); v != "" {
			values[i] = v
			known++
			count[v]++
		}
	}
	for v, c := range count {
		if c > n || (c == n && v < common) {
			common, n = v, c
		}
	}
	for i, p := range ports {
		if v := values[i]; v != "" && v != common {
			odd = append(odd, p)
		}
	}
	return odd, common, n, known
}
