package jobrails

import "slices"

// fits reports whether the allocator can satisfy the template of s on node
// n now: for each rail r of s, r.GPUs pairs of a free GPU whose address is
// one of r.BusIDs and a NIC request slot on a device of rail r, the two on
// one pcieRoot (the template's matchAttribute). GPUs are distinct; a
// shared NIC serves as many pairs as it has slots. The allocator searches
// every assignment, so the question is a matching: a flow from each rail
// (its pair count) through its NIC slots on each root to the GPUs of that
// root, one unit per GPU.
func (s Set) fits(n Node) bool {
	need := s.GPUs()
	if need == 0 {
		return false
	}
	g := newFlow()
	src, sink := g.node(), g.node()
	gpu := make([]int, len(n.GPUs))
	for i, x := range n.GPUs {
		gpu[i] = -1
		if x.Free && x.Root != "" {
			gpu[i] = g.node()
			g.edge(gpu[i], sink, 1)
		}
	}
	for _, r := range s {
		rail := g.node()
		g.edge(src, rail, r.GPUs)
		slots := map[string]int{} // pcieRoot -> NIC slots of rail r
		var roots []string
		for _, nic := range n.NICs {
			if nic.Rail != r.Rail || nic.Root == "" || nic.Slots == 0 {
				continue
			}
			if _, ok := slots[nic.Root]; !ok {
				roots = append(roots, nic.Root)
			}
			slots[nic.Root] = min(slots[nic.Root]+nic.Slots, unlimited)
		}
		for _, root := range roots {
			at := g.node()
			g.edge(rail, at, slots[root])
			for i, x := range n.GPUs {
				if gpu[i] >= 0 && x.Root == root && slices.Contains(r.BusIDs, x.BusID) {
					g.edge(at, gpu[i], 1)
				}
			}
		}
	}
	return g.max(src, sink) >= need
}

// flow is a small max-flow graph (Ford-Fulkerson over DFS paths: a node
// has a few dozen devices, the flow is at most its GPU count).
type flow struct {
	adj  [][]int // node -> edge indexes
	to   []int
	capa []int
}

func newFlow() *flow { return &flow{} }

func (f *flow) node() int {
	f.adj = append(f.adj, nil)
	return len(f.adj) - 1
}

// edge adds u->v with capacity c and its residual v->u.
func (f *flow) edge(u, v, c int) {
	f.adj[u] = append(f.adj[u], len(f.to))
	f.to, f.capa = append(f.to, v), append(f.capa, c)
	f.adj[v] = append(f.adj[v], len(f.to))
	f.to, f.capa = append(f.to, u), append(f.capa, 0)
}

func (f *flow) max(s, t int) int {
	total := 0
	for {
		seen := make([]bool, len(f.adj))
		pushed := f.push(s, t, unlimited, seen)
		if pushed == 0 {
			return total
		}
		total += pushed
	}
}

func (f *flow) push(u, t, limit int, seen []bool) int {
	if u == t {
		return limit
	}
	seen[u] = true
	for _, e := range f.adj[u] {
		v := f.to[e]
		if seen[v] || f.capa[e] == 0 {
			continue
		}
		if got := f.push(v, t, min(limit, f.capa[e]), seen); got > 0 {
			f.capa[e] -= got
			f.capa[e^1] += got
			return got
		}
	}
	return 0
}
