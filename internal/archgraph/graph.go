package archgraph

import (
	"fmt"
	"slices"
	"strings"
)

// Package is what the graph needs of one `go list -json` entry.
type Package struct {
	ImportPath string
	Imports    []string // direct, non-test imports
}

// Graph is the module's packages by layer and the arrows between them.
type Graph struct {
	// Groups are the layers in drawing order (empty ones left out), then
	// Unassigned when a package has no layer.
	Groups []Group
	// Edges are importer -> imported, module-relative, transitively
	// reduced, sorted.
	Edges [][2]string
	// LayerEdges are layer -> layer by Layer.ID, where a package of the
	// first imports one of the second, transitively reduced, sorted; the
	// layers of tests left out.
	LayerEdges [][2]string
	// LayerCycle, when not empty, is a cycle of layers importing each
	// other ("a -> b -> a"): the layering is wrong.
	LayerCycle string
	// Unassigned are the packages no layer names, sorted.
	Unassigned []string
	// Unused are exact patterns that name no package (a package moved or
	// removed), sorted.
	Unused []string
}

// Group is one layer's packages, sorted.
type Group struct {
	Layer    Layer
	Packages []string
}

// Build groups the module's packages by layer and reduces their imports.
// module is the module path; imports outside it are dropped.
func Build(module string, pkgs []Package, layers []Layer) Graph {
	prefix := module + "/"
	rel := func(p string) (string, bool) {
		if p == module {
			return ".", true
		}
		r, ok := strings.CutPrefix(p, prefix)
		return r, ok
	}
	imports := map[string][]string{}
	for _, p := range pkgs {
		r, ok := rel(p.ImportPath)
		if !ok {
			continue
		}
		deps := []string{}
		for _, d := range p.Imports {
			if dr, ok := rel(d); ok && dr != r {
				deps = append(deps, dr)
			}
		}
		slices.Sort(deps)
		imports[r] = slices.Compact(append(imports[r], deps...))
	}
	for _, deps := range imports { // an import go list did not list is still drawn
		for _, d := range deps {
			if _, ok := imports[d]; !ok {
				imports[d] = nil
			}
		}
	}

	var g Graph
	members := make([][]string, len(layers))
	used := map[string]bool{}
	for _, p := range sortedKeys(imports) {
		i, pat := layerOf(p, layers)
		if i < 0 {
			g.Unassigned = append(g.Unassigned, p)
			continue
		}
		used[pat] = true
		members[i] = append(members[i], p)
	}
	for i, l := range layers {
		for _, pat := range l.Patterns {
			if !strings.HasSuffix(pat, "/...") && !used[pat] {
				g.Unused = append(g.Unused, pat)
			}
		}
		if len(members[i]) > 0 {
			g.Groups = append(g.Groups, Group{Layer: l, Packages: members[i]})
		}
	}
	slices.Sort(g.Unused)
	if len(g.Unassigned) > 0 {
		g.Groups = append(g.Groups, Group{Layer: Unassigned, Packages: g.Unassigned})
	}
	g.Edges = reduce(imports)
	between := layerImports(imports, layers)
	if g.LayerCycle = layerCycle(between); g.LayerCycle == "" {
		g.LayerEdges = reduce(between)
	}
	return g
}

// layerOf returns the index of p's layer and the pattern that placed it
// there, or -1.
func layerOf(p string, layers []Layer) (int, string) {
	best, bestPat, bestLen := -1, "", -1
	for i, l := range layers {
		for _, pat := range l.Patterns {
			n := -1
			if base, ok := strings.CutSuffix(pat, "/..."); ok {
				if p == base || strings.HasPrefix(p, base+"/") {
					n = len(base)
				}
			} else if p == pat {
				n = len(pat) + 1<<20 // an exact path wins over any prefix
			}
			if n > bestLen {
				best, bestPat, bestLen = i, pat, n
			}
		}
	}
	return best, bestPat
}

// reduce returns the edges of the transitive reduction of imports (an
// acyclic graph, as Go's imports are): u -> v stays unless v is reachable
// from another of u's imports. Imports of packages outside the map are
// kept as they are.
func reduce(imports map[string][]string) [][2]string {
	reach := map[string]map[string]bool{}
	var reachable func(p string, seen map[string]bool) map[string]bool
	reachable = func(p string, seen map[string]bool) map[string]bool {
		if r, ok := reach[p]; ok {
			return r
		}
		if seen[p] { // a cycle: not Go, but never loop
			return nil
		}
		seen[p] = true
		r := map[string]bool{}
		for _, d := range imports[p] {
			r[d] = true
			for x := range reachable(d, seen) {
				r[x] = true
			}
		}
		reach[p] = r
		return r
	}
	var edges [][2]string
	for _, u := range sortedKeys(imports) {
		for _, v := range imports[u] {
			implied := false
			for _, w := range imports[u] {
				if w != v && reachable(w, map[string]bool{})[v] {
					implied = true
					break
				}
			}
			if !implied {
				edges = append(edges, [2]string{u, v})
			}
		}
	}
	return edges
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// Mermaid renders the graph as a mermaid flowchart (without the code
// fence).
func (g Graph) Mermaid() string {
	ids := nodeIDs(g.Groups)
	var b strings.Builder
	b.WriteString("flowchart TB\n")
	for _, grp := range g.Groups {
		fmt.Fprintf(&b, "  subgraph l_%s[\"%s\"]\n", grp.Layer.ID, grp.Layer.Title)
		for _, p := range grp.Packages {
			fmt.Fprintf(&b, "    %s[\"%s\"]\n", ids[p], label(p))
		}
		b.WriteString("  end\n")
	}
	for _, e := range g.Edges {
		fmt.Fprintf(&b, "  %s --> %s\n", ids[e[0]], ids[e[1]])
	}
	return b.String()
}

// label is a package's name in the diagram: its path without "internal/".
func label(p string) string {
	if p == "." {
		return "(module root)"
	}
	return strings.TrimPrefix(p, "internal/")
}

// nodeIDs gives every package a mermaid node ID made of its path's letters
// and digits ("internal/cni/config" -> "p_internal_cni_config"), unique
// (a "_2" suffix and so on when two paths spell the same). Subgraphs are
// "l_<layer ID>": the prefixes keep both apart and off mermaid's keywords.
func nodeIDs(groups []Group) map[string]string {
	ids := map[string]string{}
	taken := map[string]bool{}
	for _, grp := range groups {
		for _, p := range grp.Packages {
			base := "p_" + strings.Map(func(r rune) rune {
				if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
					return r
				}
				return '_'
			}, p)
			id := base
			for n := 2; taken[id]; n++ {
				id = fmt.Sprintf("%s_%d", base, n)
			}
			taken[id] = true
			ids[p] = id
		}
	}
	return ids
}
