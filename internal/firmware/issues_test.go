package firmware

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The table's ranges: from the release an issue was detected in to the
// newest whose notes still list it, both included; another model or
// vendor, a release outside, or a version that does not parse, none.
func TestKnownIssuesByRange(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		model   Model
		version string
		want    []string
	}{
		{Model{0x15b3, 0x101d}, "22.45.1020", []string{"4394475"}},
		{Model{0x15b3, 0x101d}, "22.46.3048", []string{"4394475"}},
		{Model{0x15b3, 0x101d}, "22.45.1019", nil},
		{Model{0x15b3, 0x101d}, "22.46.3049", nil},
		{Model{0x15b3, 0x101d}, "22.43.2026", []string{"4402045"}},
		{Model{0x15b3, 0x101d}, "22.39.1002", nil},
		{Model{0x15b3, 0x1021}, "28.46.1000", []string{"4394475"}},
		{Model{0x15b3, 0x1021}, "28.36.1700", []string{"3327847"}},
		{Model{0x15b3, 0x1021}, "28.38.1500", []string{"3363753"}},
		{Model{0x15b3, 0x1017}, "16.45.1020", nil}, // ConnectX-5: its notes were not read
		{Model{0x8086, 0x1021}, "28.38.1500", nil}, // another vendor's device 1021
		{Model{0x15b3, 0x101d}, "22.45", nil},
		{Model{0x15b3, 0x101d}, "22.45.x", nil},
		{Model{0x15b3, 0x101d}, " 22.45.1020\n", []string{"4394475"}},
	} {
		var got []string
		for _, fi := range KnownIssues(tc.model, tc.version) {
			got = append(got, fi.ID)
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s %q (-want +got):\n%s", tc.model, tc.version, diff)
		}
	}
	for _, fi := range issues {
		from, ok1 := ParseVersion(fi.From)
		to, ok2 := ParseVersion(fi.To)
		if !ok1 || !ok2 || from.Compare(to) > 0 || fi.Source == "" || fi.Fix == "" || fi.What == "" {
			t.Errorf("table row %+v", fi)
		}
	}
}

func TestParseVersion(t *testing.T) {
	t.Parallel()
	for s, want := range map[string]bool{
		"28.39.1002": true, " 28.39.1002\n": true, "0.0.0": true, "28.39.0100": true,
		"": false, "28.39": false, "28.39.1002.1": false, "28.39.x": false, "28.-39.1002": false,
		"28.+39.1002": false, "28. 39.1002": false, "28..1002": false, "28.39.99999999999999999999": false,
	} {
		if _, ok := ParseVersion(s); ok != want {
			t.Errorf("ParseVersion(%q) ok = %v, want %v", s, ok, want)
		}
	}
	a, _ := ParseVersion("28.39.1002")
	b, _ := ParseVersion("28.39.0999")
	c, _ := ParseVersion("28.40.0")
	if a.Compare(b) != 1 || b.Compare(a) != -1 || a.Compare(a) != 0 || a.Compare(c) != -1 {
		t.Errorf("Compare: %v %v %v", a, b, c)
	}
}

func FuzzParseVersion(f *testing.F) {
	for _, s := range []string{"28.39.1002", "22.45", "", "1.2.3.4", "9.9.99999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, ok := ParseVersion(s)
		if !ok {
			return
		}
		if v.Compare(v) != 0 || v[0] < 0 || v[1] < 0 || v[2] < 0 {
			t.Fatalf("ParseVersion(%q) = %v", s, v)
		}
	})
}
