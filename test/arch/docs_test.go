package arch

import (
	"regexp"
	"strings"
	"testing"

	"github.com/railyard-io/railyard/internal/archgraph"
	"github.com/railyard-io/railyard/internal/inputfile"
)

// docRows reads docs/architecture.md's "Packages and their invariants":
// the packages each table row names in its first cell, by the "###"
// heading it is under ("" before the first).
func docRows(t *testing.T) map[string][][]string {
	t.Helper()
	doc, err := inputfile.Read("../../docs/architecture.md", 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	text := string(doc)
	i := strings.Index(text, "\n## Packages and their invariants\n")
	if i < 0 {
		t.Fatal(`docs/architecture.md has no "## Packages and their invariants"`)
	}
	text = text[i+1:]
	if j := strings.Index(text[3:], "\n## "); j >= 0 {
		text = text[:j+3]
	}
	name := regexp.MustCompile("`([^`]+)`")
	rows := map[string][][]string{}
	heading := ""
	for _, l := range strings.Split(text, "\n") {
		if h, ok := strings.CutPrefix(l, "### "); ok {
			heading = h
			continue
		}
		if !strings.HasPrefix(l, "| `") {
			continue
		}
		var names []string
		for _, m := range name.FindAllStringSubmatch(strings.Split(l, "|")[1], -1) {
			names = append(names, m[1])
		}
		rows[heading] = append(rows[heading], names)
	}
	return rows
}

// named says whether a row's names name package p ("x/..." names x and
// everything below it).
func named(names []string, p string) bool {
	for _, n := range names {
		if n == p {
			return true
		}
		if base, ok := strings.CutSuffix(n, "/..."); ok && (p == base || strings.HasPrefix(p, base+"/")) {
			return true
		}
	}
	return false
}

// TestDocTableHasEveryPackageInItsLayer: every package of the module has a
// row in docs/architecture.md's package table, a library package (under
// internal/ or api/, and machines) under the heading of its layer as
// internal/archgraph/layers.go titles it; every heading is a layer's.
func TestDocTableHasEveryPackageInItsLayer(t *testing.T) {
	module, pkgs, err := archgraph.Load("../..")
	if err != nil {
		t.Fatal(err)
	}
	rows := docRows(t)
	titles := map[string]bool{}
	for _, l := range archgraph.Layers {
		titles[l.Title] = true
	}
	for h := range rows {
		if h != "" && !titles[h] {
			t.Errorf("docs/architecture.md: heading %q is no layer's title (internal/archgraph/layers.go)", h)
		}
	}
	for _, p := range pkgs {
		rel, ok := strings.CutPrefix(p.ImportPath, module+"/")
		if !ok {
			continue
		}
		layer, ok := archgraph.LayerOf(rel, archgraph.Layers)
		if !ok {
			continue // TestDocGraphMatchesImports names it
		}
		library := under(rel, "internal", "api", "machines")
		found := false
		for h, rs := range rows {
			if library && h != layer.Title {
				continue
			}
			for _, names := range rs {
				found = found || named(names, rel)
			}
		}
		switch {
		case found:
		case library:
			t.Errorf("docs/architecture.md: no row for %s under %q", rel, "### "+layer.Title)
		default:
			t.Errorf("docs/architecture.md: no row for %s", rel)
		}
	}
}
