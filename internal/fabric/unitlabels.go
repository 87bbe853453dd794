package fabric

import "sort"

// UnitLabels returns the value of each node's unit label (UnitLabel, or
// the scheme's unit key), by node name, from every node's ports: the unit
// Analyze groups the node into, learned from the switches each port is
// known to reach (its neighbor, else its last one: Known), named after
// the unit's first leaf by name (LabelValue: "su2-leaf0", "rack7-tor").
// The name holds still while the unit's leaves do: it does not follow the
// order of node names as Analyze's unit numbers do, and a dead rail,
// even a whole dead leaf, leaves it as it was. A node in no unit (no port
// ever heard a neighbor) or in a unit that owns no switch is absent.
//
// Leaf sets nest in units: nodes with the same known rail=leaf pairs
// reach the same switches, so they join the same unit.
func UnitLabels(nodes []Node) map[string]string {
	known := make([]Node, len(nodes))
	for i, n := range nodes {
		known[i] = Node{Name: n.Name, Ports: Known(n.Ports)}
	}
	sort.SliceStable(known, func(i, j int) bool { return known[i].Name < known[j].Name })
	m := newModel(known)
	out := map[string]string{}
	for _, u := range m.units {
		if len(u.leaves) == 0 {
			continue
		}
		name := LabelValue(m.switches[u.leaves[0]]) // leaves are sorted by name
		for _, ni := range u.nodes {
			out[known[ni].Name] = name
		}
	}
	return out
}

// Known returns a copy of the ports with each port's last switch as its
// switch where it has none now (Port.LastSwitch): the cabling the node is
// known to have, for grouping it into its unit. Ports are not modified.
func Known(ports []Port) []Port {
	out := append([]Port(nil), ports...)
	for i := range out {
		if out[i].Switch == "" && out[i].LastSwitch != "" {
			out[i].Switch, out[i].LastSwitch = out[i].LastSwitch, ""
		}
	}
	return out
}
