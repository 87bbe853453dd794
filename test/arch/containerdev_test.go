package arch

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// containerLiterals are what only internal/containerdev spells: where RDMA
// device nodes are in a container, and the device-info document's fields
// (a struct of its own elsewhere is a second document).
var containerLiterals = []string{`/dev/infiniband`, `json:"pci-address`}

// TestWhatAContainerGetsIsBuiltInOnePlace: no Go source outside
// internal/containerdev (tests aside) has a string literal or struct tag
// naming /dev/infiniband or the device-info document's pci-address; the
// device plugin, late binding, the DRA driver and railyard-cni use
// containerdev's nodes, environment and document. (The DRA driver no
// longer importing internal/binding is a rule of TestArchitectureRules.)
func TestWhatAContainerGetsIsBuiltInOnePlace(t *testing.T) {
	checked := 0
	err := filepath.WalkDir("../..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel := filepath.ToSlash(strings.TrimPrefix(path, "../../"))
		if d.IsDir() {
			if (path != "../.." && strings.HasPrefix(d.Name(), ".")) || d.Name() == "testdata" || d.Name() == "vendor" || rel == "internal/containerdev" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		checked++
		ast.Inspect(f, func(n ast.Node) bool {
			if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
				for _, s := range containerLiterals {
					if strings.Contains(lit.Value, s) {
						t.Errorf("%s: %s spells %s: use internal/containerdev", rel, lit.Value, s)
					}
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 100 {
		t.Fatalf("only %d Go files checked (paths moved?)", checked)
	}
}
