package schedtopo

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/railyard-io/railyard/internal/fabric"
)

// HostnameLabel is the lowest level of every topology: the node itself.
const HostnameLabel = "kubernetes.io/hostname"

// ErrTopology is wrapped by the errors of labels that do not form the
// two-level tree (a leaf set in two units) and of jobs no domain holds.
var ErrTopology = errors.New("fabric labels")

// Levels are the node label keys of the topology, widest first: the unit,
// the leaf set, the node.
func Levels(k fabric.LabelKeys) []string {
	k = k.WithDefaults()
	return []string{k.Unit, k.LeafSet, HostnameLabel}
}

// Node is a node's name and labels.
type Node struct {
	Name   string
	Labels map[string]string
}

// LeafSet is one value of the leaf-set label: its nodes and the units they
// are in.
type LeafSet struct {
	Value string
	// Nodes are its nodes, sorted.
	Nodes []string
	// Units are the unit label values of its nodes, sorted; one when the
	// labels nest ("" for nodes without the unit label).
	Units []string
}

// Domains are the fabric's domains as the nodes' labels draw them.
type Domains struct {
	Keys fabric.LabelKeys
	// LeafSets are the leaf sets, by value.
	LeafSets map[string]*LeafSet
	// Units maps each unit value to its nodes, sorted.
	Units map[string][]string
	// Nodes is how many nodes were read; WithoutLeafSet and WithoutUnit
	// name those lacking a level's label.
	Nodes                       int
	WithoutLeafSet, WithoutUnit []string
}

// Group reads the domains of nodes under keys (defaults filled).
func Group(nodes []Node, keys fabric.LabelKeys) Domains {
	keys = keys.WithDefaults()
	d := Domains{Keys: keys, LeafSets: map[string]*LeafSet{}, Units: map[string][]string{}, Nodes: len(nodes)}
	sorted := slices.SortedFunc(slices.Values(nodes), func(a, b Node) int { return cmp.Compare(a.Name, b.Name) })
	for _, n := range sorted {
		unit, hasUnit := n.Labels[keys.Unit]
		if hasUnit && unit != "" {
			d.Units[unit] = append(d.Units[unit], n.Name)
		} else {
			d.WithoutUnit = append(d.WithoutUnit, n.Name)
			unit = ""
		}
		ls, ok := n.Labels[keys.LeafSet]
		if !ok || ls == "" {
			d.WithoutLeafSet = append(d.WithoutLeafSet, n.Name)
			continue
		}
		l := d.LeafSets[ls]
		if l == nil {
			l = &LeafSet{Value: ls}
			d.LeafSets[ls] = l
		}
		l.Nodes = append(l.Nodes, n.Name)
		if !slices.Contains(l.Units, unit) {
			l.Units = append(l.Units, unit)
			slices.Sort(l.Units)
		}
	}
	return d
}

// Conflicts describe the leaf sets whose nodes are in more than one unit
// (the labels do not nest: a scheduler's tree needs one parent per
// domain), in leaf-set order.
func (d Domains) Conflicts() []string {
	var out []string
	for _, v := range slices.Sorted(maps.Keys(d.LeafSets)) {
		if l := d.LeafSets[v]; len(l.Units) > 1 {
			out = append(out, fmt.Sprintf("leaf set %s (%s) has nodes in units %q", v, d.Keys.LeafSet, l.Units))
		}
	}
	return out
}

// Largest is how many nodes the largest domain of key holds (the leaf-set
// or the unit key; 1 for the hostname).
func (d Domains) Largest(key string) int {
	n := 0
	switch key {
	case d.Keys.LeafSet:
		for _, l := range d.LeafSets {
			n = max(n, len(l.Nodes))
		}
	case d.Keys.Unit:
		for _, u := range d.Units {
			n = max(n, len(u))
		}
	case HostnameLabel:
		n = min(d.Nodes, 1)
	}
	return n
}

// Level is the narrowest level with a domain of at least pods nodes (one
// pod per node, as a job of whole rails takes): the leaf set, else the
// unit; ErrTopology when no domain has that many.
func (d Domains) Level(pods int) (string, error) {
	for _, key := range []string{d.Keys.LeafSet, d.Keys.Unit} {
		if d.Largest(key) >= pods {
			return key, nil
		}
	}
	return "", fmt.Errorf("%w: no leaf set (%s, at most %d nodes) nor unit (%s, at most %d nodes) holds %d nodes",
		ErrTopology, d.Keys.LeafSet, d.Largest(d.Keys.LeafSet), d.Keys.Unit, d.Largest(d.Keys.Unit), pods)
}
