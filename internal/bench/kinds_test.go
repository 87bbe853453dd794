package bench

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Every kind of the table writes its rows and reads them back as the same
// kind (its rowField is what picks it), and prints a table.
func TestKindsTableRoundTrips(t *testing.T) {
	t.Parallel()
	for _, k := range kinds {
		r := Result{Tool: "x", Kind: k.kind, OK: true, Summary: map[string]float64{}}
		if err := k.rows(&r).unmarshal([]byte(`[{"` + k.rowField + `": 1}]`)); err != nil {
			t.Fatalf("%s: %v", k.kind, err)
		}
		data, err := json.Marshal(r)
		if err != nil {
			t.Fatalf("%s: %v", k.kind, err)
		}
		var back Result
		if err := json.Unmarshal(data, &back); err != nil {
			t.Fatalf("%s: %v", k.kind, err)
		}
		if diff := cmp.Diff(r, back); diff != "" {
			t.Errorf("%s read back (-want +got):\n%s", k.kind, diff)
		}
		if cols, cells := r.Table(); len(cells) != 1 || len(cells[0]) != len(cols) {
			t.Errorf("%s: table %q %q: one row of %d cells wanted", k.kind, cols, cells, len(cols))
		}
	}
}

// The families table and the kinds table agree: every family has a row
// (a name and a parser) and at least one kind, every kind read from text
// names a family of the table, and what Parse makes of each saved text
// output is a kind of the family Detect names.
func TestFamiliesAndKindsAreOneTable(t *testing.T) {
	t.Parallel()
	kindsOf := map[Family][]Kind{}
	for _, k := range kinds {
		if k.family == FamilyUnknown {
			continue
		}
		if _, ok := familyRowOf(k.family); !ok {
			t.Errorf("kind %s: family %d has no row in families", k.kind, k.family)
		}
		kindsOf[k.family] = append(kindsOf[k.family], k.kind)
	}
	names := map[string]bool{}
	for _, f := range families {
		if f.family == FamilyUnknown || f.name == "" || f.parse == nil || names[f.name] {
			t.Errorf("family %d %q: unknown, unnamed, without a parser or named twice", f.family, f.name)
		}
		names[f.name] = true
		if len(kindsOf[f.family]) == 0 {
			t.Errorf("family %s has no kind in kinds", f.name)
		}
	}
	entries, err := os.ReadDir(filepath.Join("testdata", "vectors"))
	if err != nil {
		t.Fatal(err)
	}
	checked := map[Family]bool{}
	for _, e := range entries {
		data := loadVector(t, e.Name())
		fam := Detect(data)
		r := Parse(data)
		if fam == FamilyUnknown || r.Kind == KindUnknown {
			continue // JSON, errors before any result, unknown output
		}
		row, _ := kindRowOf(r.Kind)
		if row.family != fam {
			t.Errorf("%s: Detect says family %d, Parse's kind %s is of family %d", e.Name(), fam, r.Kind, row.family)
		}
		checked[fam] = true
	}
	for _, f := range families {
		if !checked[f.family] {
			t.Errorf("no saved output of family %s was parsed to a kind", f.name)
		}
	}
}
