package archgraph

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var viewLayers = []Layer{
	{ID: "cmd", Title: "mains", Patterns: []string{"cmd/..."}},
	{ID: "mid", Title: "middle", Patterns: []string{"internal/m1", "internal/m2"}},
	{ID: "low", Title: "leaves", Patterns: []string{"internal/l"}},
	{ID: "tests", Title: "tests", Tests: true, Patterns: []string{"internal/ltest"}},
}

// The layer view has one box per layer with packages (not the tests'), an
// arrow where a package of one imports one of another, reduced: cmd ->
// low is implied by cmd -> mid -> low.
func TestLayerViewDrawsLayersAndReducedArrows(t *testing.T) {
	t.Parallel()
	g := Build(mod, pkgs(map[string][]string{
		"cmd/x":          {"internal/m1", "internal/l"},
		"internal/m1":    {"internal/m2"},
		"internal/m2":    {"internal/l"},
		"internal/l":     nil,
		"internal/ltest": {"cmd/x", "internal/l"},
	}), viewLayers)
	if err := g.Check(); err != nil {
		t.Fatal(err)
	}
	want := "flowchart TB\n" +
		"  L_cmd[\"mains\"]\n  L_mid[\"middle\"]\n  L_low[\"leaves\"]\n" +
		"  L_cmd --> L_mid\n  L_mid --> L_low\n"
	if diff := cmp.Diff(want, g.LayerMermaid()); diff != "" {
		t.Errorf("layer view (-want +got):\n%s", diff)
	}
	if d := g.Diagrams(); !strings.Contains(d, "```mermaid\n"+g.LayerMermaid()+"```\n\n```mermaid\n"+g.Mermaid()+"```\n") {
		t.Errorf("Diagrams: the layer view, then the package graph, wanted:\n%s", d)
	}
}

// Layers that import each other are a wrong layering: Check names the
// cycle and no layer arrows are drawn.
func TestLayersImportingEachOtherFailCheck(t *testing.T) {
	t.Parallel()
	g := Build(mod, pkgs(map[string][]string{
		"cmd/x":       {"internal/m1"},
		"internal/m1": {"internal/l"},
		"internal/l":  {"internal/m2"},
		"internal/m2": nil,
	}), viewLayers)
	err := g.Check()
	if err == nil || !strings.Contains(err.Error(), "mid -> low -> mid") {
		t.Errorf("Check() = %v, want the cycle mid -> low -> mid", err)
	}
	if len(g.LayerEdges) != 0 {
		t.Errorf("layer arrows %v drawn for a cycle", g.LayerEdges)
	}
}
