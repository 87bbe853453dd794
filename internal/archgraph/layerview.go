package archgraph

import (
	"fmt"
	"slices"
	"strings"
)

// layerImports returns which layers each layer imports: layer A imports
// layer B when a package of A imports one of B (imports is every direct
// import, not the reduced ones), by layer ID, sorted. Packages without a
// layer and layers of tests are left out.
func layerImports(imports map[string][]string, layers []Layer) map[string][]string {
	id := func(p string) string {
		if i, _ := layerOf(p, layers); i >= 0 && !layers[i].Tests {
			return layers[i].ID
		}
		return ""
	}
	between := map[string][]string{}
	for _, p := range sortedKeys(imports) {
		from := id(p)
		if from == "" {
			continue
		}
		if _, ok := between[from]; !ok {
			between[from] = nil
		}
		for _, d := range imports[p] {
			if to := id(d); to != "" && to != from && !slices.Contains(between[from], to) {
				between[from] = append(between[from], to)
			}
		}
	}
	for _, deps := range between {
		slices.Sort(deps)
	}
	return between
}

// layerCycle returns a cycle of layers importing each other ("a -> b ->
// a"), or "" when they are layered.
func layerCycle(between map[string][]string) string {
	const (
		unseen = iota
		open
		done
	)
	state := map[string]int{}
	var path []string
	var visit func(l string) string
	visit = func(l string) string {
		switch state[l] {
		case open:
			i := slices.Index(path, l)
			return strings.Join(append(slices.Clone(path[i:]), l), " -> ")
		case done:
			return ""
		}
		state[l] = open
		path = append(path, l)
		for _, d := range between[l] {
			if c := visit(d); c != "" {
				return c
			}
		}
		path = path[:len(path)-1]
		state[l] = done
		return ""
	}
	for _, l := range sortedKeys(between) {
		if c := visit(l); c != "" {
			return c
		}
	}
	return ""
}

// LayerMermaid renders the layers alone as a mermaid flowchart (without
// the code fence): one box per layer that has packages (but the layers of
// tests), an arrow where a package of one imports a package of the other,
// transitively reduced as the package graph is.
func (g Graph) LayerMermaid() string {
	var b strings.Builder
	b.WriteString("flowchart TB\n")
	for _, grp := range g.Groups {
		if !grp.Layer.Tests {
			fmt.Fprintf(&b, "  L_%s[\"%s\"]\n", grp.Layer.ID, grp.Layer.Title)
		}
	}
	for _, e := range g.LayerEdges {
		fmt.Fprintf(&b, "  L_%s --> L_%s\n", e[0], e[1])
	}
	return b.String()
}
