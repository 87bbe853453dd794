package archgraph

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const mod = "example.com/m"

func pkgs(imports map[string][]string) []Package {
	var ps []Package
	for p, deps := range imports {
		full := make([]string, len(deps))
		for i, d := range deps {
			if !strings.HasPrefix(d, "internal/") && !strings.HasPrefix(d, "cmd/") { // outside the module
				full[i] = d
			} else {
				full[i] = mod + "/" + d
			}
		}
		ps = append(ps, Package{ImportPath: mod + "/" + p, Imports: full})
	}
	return ps
}

var testLayers = []Layer{
	{ID: "top", Title: "top", Patterns: []string{"cmd/...", "internal/cli/..."}},
	{ID: "leaf", Title: "leaves", Patterns: []string{"internal/a", "internal/b", "internal/cli/clitest", "internal/gone"}},
}

func TestBuildGroupsByMostSpecificPattern(t *testing.T) {
	t.Parallel()
	g := Build(mod, pkgs(map[string][]string{
		"cmd/x":                {"internal/cli"},
		"internal/cli":         {"internal/a"},
		"internal/cli/clitest": nil,
		"internal/a":           nil,
		"internal/new":         nil,
	}), testLayers)
	want := []Group{
		{Layer: testLayers[0], Packages: []string{"cmd/x", "internal/cli"}},
		{Layer: testLayers[1], Packages: []string{"internal/a", "internal/cli/clitest"}},
		{Layer: Unassigned, Packages: []string{"internal/new"}},
	}
	if diff := cmp.Diff(want, g.Groups); diff != "" {
		t.Errorf("groups (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"internal/new"}, g.Unassigned); diff != "" {
		t.Errorf("unassigned (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"internal/b", "internal/gone"}, g.Unused); diff != "" {
		t.Errorf("unused (-want +got):\n%s", diff)
	}
	if err := g.Check(); err == nil || !strings.Contains(err.Error(), "internal/new") || !strings.Contains(err.Error(), "internal/gone") {
		t.Errorf("Check() = %v, want it to name internal/new and internal/gone", err)
	}
}

func TestBuildReducesTransitiveImportsAndDropsOutsideOnes(t *testing.T) {
	t.Parallel()
	g := Build(mod, pkgs(map[string][]string{
		"cmd/x":        {"internal/cli", "internal/a", "internal/b", "fmt", "example.org/other"},
		"internal/cli": {"internal/a"},
		"internal/a":   {"internal/b"},
		"internal/b":   nil,
	}), testLayers)
	want := [][2]string{
		{"cmd/x", "internal/cli"},
		{"internal/a", "internal/b"},
		{"internal/cli", "internal/a"},
	}
	if diff := cmp.Diff(want, g.Edges); diff != "" {
		t.Errorf("edges (-want +got):\n%s", diff)
	}
	if err := g.Check(); err == nil || strings.Contains(err.Error(), "without a layer") {
		t.Errorf("Check() = %v, want only the unused patterns", err)
	}
}

func TestBuildDrawsAnImportGoListDidNotList(t *testing.T) {
	t.Parallel()
	g := Build(mod, pkgs(map[string][]string{"cmd/x": {"internal/ghost"}}), testLayers)
	if diff := cmp.Diff([]string{"internal/ghost"}, g.Unassigned); diff != "" {
		t.Errorf("unassigned (-want +got):\n%s", diff)
	}
	if !strings.Contains(g.Mermaid(), "p_cmd_x --> p_internal_ghost") {
		t.Errorf("the edge to internal/ghost is not drawn:\n%s", g.Mermaid())
	}
}

func TestReduceNeverLoopsOnACycle(t *testing.T) {
	t.Parallel()
	got := reduce(map[string][]string{"a": {"b"}, "b": {"a"}})
	if len(got) == 0 {
		t.Errorf("reduce of a cycle dropped every edge")
	}
}

func TestMermaid(t *testing.T) {
	t.Parallel()
	g := Build(mod, pkgs(map[string][]string{
		"cmd/x":      {"internal/a"},
		"cmd/x-y":    nil,
		"cmd/x_y":    nil,
		"internal/a": nil,
	}), testLayers)
	want := `flowchart TB
  subgraph l_top["top"]
    p_cmd_x["cmd/x"]
    p_cmd_x_y["cmd/x-y"]
    p_cmd_x_y_2["cmd/x_y"]
  end
  subgraph l_leaf["leaves"]
    p_internal_a["a"]
  end
  p_cmd_x --> p_internal_a
`
	if diff := cmp.Diff(want, g.Mermaid()); diff != "" {
		t.Errorf("mermaid (-want +got):\n%s", diff)
	}
}

func TestDecode(t *testing.T) {
	t.Parallel()
	got, err := Decode(strings.NewReader(`{"ImportPath":"m/a","Imports":["m/b"]}
{"ImportPath":"m/b"}`))
	if err != nil {
		t.Fatal(err)
	}
	want := []Package{{ImportPath: "m/a", Imports: []string{"m/b"}}, {ImportPath: "m/b"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if _, err := Decode(strings.NewReader(`{"ImportPath":`)); err == nil {
		t.Error("Decode of a cut-off stream succeeded")
	}
}
