package dra_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/railyard-io/railyard/internal/topology"
)

// The independent answer: what the best claim result is, computed from the
// topology model alone (not from the published attributes), by exhaustive
// search over which GPUs and NICs pair up.

// endpoint is a GPU or NIC device as the claims see it: its PCI host
// bridge ("" unknown) and NUMA node (-1 unknown).
type endpoint struct {
	pci  string
	root string
	numa int
}

func modelGPUs(t *topology.Topology) []endpoint {
	var out []endpoint
	for _, g := range t.GPUs {
		if g.Vendor != 0x10de {
			continue
		}
		d, _ := t.Device(g.PCI)
		out = append(out, endpoint{g.PCI, d.HostBridge, g.NUMA})
	}
	return out
}

// modelNICs lists the devices a healthy pool of kind would offer: every
// PF ("pf") or VF ("vf") whose health rule passes and that has verbs.
func modelNICs(t *topology.Topology, kind string) []endpoint {
	var out []endpoint
	for _, n := range t.NICs {
		d, _ := t.Device(n.PCI)
		if kind == "pf" {
			if n.Healthy() && n.RDMA != "" && n.Uverbs != "" {
				out = append(out, endpoint{n.PCI, d.HostBridge, n.NUMA})
			}
			continue
		}
		for _, vf := range n.VFs {
			ok, _ := n.VFHealth(vf)
			if !ok || vf.RDMA == "" || vf.Uverbs == "" {
				continue
			}
			numa := n.NUMA
			if vd, found := t.Device(vf.PCI); found && vd.NUMA >= 0 {
				numa = vd.NUMA
			}
			out = append(out, endpoint{vf.PCI, d.HostBridge, numa})
		}
	}
	return out
}

// level of a GPU x NIC pair: 0 same root, 1 same NUMA node, 2 neither
// (unknown roots and nodes never match, as a missing attribute never
// satisfies matchAttribute).
func level(g, n endpoint) int {
	switch {
	case g.root != "" && g.root == n.root:
		return 0
	case g.numa >= 0 && g.numa == n.numa:
		return 1
	}
	return 2
}

// score counts pairs per level: [same root, same NUMA, other].
type score [3]int

// better orders scores: more same-root pairs, then more same-NUMA pairs.
func (s score) better(o score) bool {
	if s[0] != o[0] {
		return s[0] > o[0]
	}
	return s[1] > o[1]
}

// optimum is the best score of k disjoint GPU x NIC pairs with at most
// maxLevel per pair (0: strict same root; 2: anything), by exhaustive
// search over the GPUs (each paired or not) and the NICs grouped into
// classes of equal (root, NUMA), memoised. ok is false when no k pairs
// exist at all.
func optimum(gpus, nics []endpoint, k, maxLevel int) (best score, ok bool) {
	type class struct {
		ep    endpoint
		count int
	}
	var cls []class
	for _, n := range nics {
		i := slices.IndexFunc(cls, func(c class) bool { return c.ep.root == n.root && c.ep.numa == n.numa })
		if i < 0 {
			cls = append(cls, class{n, 0})
			i = len(cls) - 1
		}
		cls[i].count++
	}
	type result struct {
		s  score
		ok bool
	}
	memo := map[string]result{}
	var search func(gi, left int) (score, bool)
	search = func(gi, left int) (score, bool) {
		if left == 0 {
			return score{}, true
		}
		if len(gpus)-gi < left {
			return score{}, false
		}
		var key strings.Builder
		fmt.Fprintf(&key, "%d/%d", gi, left)
		for _, c := range cls {
			fmt.Fprintf(&key, ",%d", c.count)
		}
		if r, seen := memo[key.String()]; seen {
			return r.s, r.ok
		}
		bestHere, found := search(gi+1, left) // GPU gi not used
		for ci := range cls {
			l := level(gpus[gi], cls[ci].ep)
			if cls[ci].count == 0 || l > maxLevel {
				continue
			}
			cls[ci].count--
			s, sub := search(gi+1, left-1)
			cls[ci].count++
			if !sub {
				continue
			}
			s[l]++
			if !found || s.better(bestHere) {
				bestHere, found = s, true
			}
		}
		memo[key.String()] = result{bestHere, found}
		return bestHere, found
	}
	return search(0, k)
}

// The exhaustive answer on hand-made nodes, so the allocator tests compare
// against something known to be right: disjoint roots, a root shared by
// two GPUs and one NIC, unknown roots and NUMA nodes.
func TestOptimumOnHandMadeNodes(t *testing.T) {
	g := func(root string, numa int) endpoint { return endpoint{pci: root + "g", root: root, numa: numa} }
	n := func(root string, numa int) endpoint { return endpoint{pci: root + "n", root: root, numa: numa} }
	for _, tc := range []struct {
		name       string
		gpus, nics []endpoint
		k, max     int
		want       score
		ok         bool
	}{
		{"one root each", []endpoint{g("a", 0), g("b", 1)}, []endpoint{n("b", 1), n("a", 0)}, 2, 0, score{2, 0, 0}, true},
		{"two GPUs, one NIC on the root", []endpoint{g("a", 0), g("a", 0)}, []endpoint{n("a", 0), n("c", 0)}, 2, 2, score{1, 1, 0}, true},
		{"strict: the second has no NIC on its root", []endpoint{g("a", 0), g("a", 0)}, []endpoint{n("a", 0), n("c", 0)}, 2, 0, score{}, false},
		{"pick the GPUs that pair", []endpoint{g("a", 0), g("a", 0), g("c", 1)}, []endpoint{n("a", 0), n("c", 1)}, 2, 0, score{2, 0, 0}, true},
		{"unknown root and NUMA match nothing", []endpoint{g("", -1)}, []endpoint{n("", -1)}, 1, 2, score{0, 0, 1}, true},
		{"more pairs than NICs", []endpoint{g("a", 0), g("b", 0)}, []endpoint{n("a", 0)}, 2, 2, score{}, false},
	} {
		got, ok := optimum(tc.gpus, tc.nics, tc.k, tc.max)
		if ok != tc.ok || (ok && got != tc.want) {
			t.Errorf("%s: %v %v, want %v %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
}
