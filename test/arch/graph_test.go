package arch

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/railyard-io/railyard/internal/archgraph"
	"github.com/railyard-io/railyard/internal/inputfile"
)

// TestDocGraphMatchesImports: docs/architecture.md's package graph is what
// `go run ./hack/archgraph -w` draws from the code's imports today, and
// every package has a layer.
func TestDocGraphMatchesImports(t *testing.T) {
	module, pkgs, err := archgraph.Load("../..")
	if err != nil {
		t.Fatal(err)
	}
	g := archgraph.Build(module, pkgs, archgraph.Layers)
	if err := g.Check(); err != nil {
		t.Error(err)
	}
	doc, err := inputfile.Read("../../docs/architecture.md", 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	got, err := archgraph.Extract(doc)
	if err != nil {
		t.Fatalf("docs/architecture.md: %v", err)
	}
	if diff := cmp.Diff(g.Diagrams(), got); diff != "" {
		t.Errorf("docs/architecture.md's graph differs from the code's imports: run `make archgraph` (-want +got):\n%s", diff)
	}
}
