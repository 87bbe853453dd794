package bench

import (
	"encoding/json"
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
