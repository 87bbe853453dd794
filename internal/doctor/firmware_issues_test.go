package doctor

import "testing"

// The table's ranges: from the release an issue was detected in to the
// newest whose notes still list it, both included; another model, a
// release outside, or a version that does not parse, none.
func TestKnownFirmwareIssuesByRange(t *testing.T) {
	for _, tc := range []struct {
		device  uint16
		version string
		want    []string
	}{
		{0x101d, "22.45.1020", []string{"4394475"}},
		{0x101d, "22.46.3048", []string{"4394475"}},
		{0x101d, "22.45.1019", nil},
		{0x101d, "22.46.3049", nil},
		{0x101d, "22.43.2026", []string{"4402045"}},
		{0x101d, "22.39.1002", nil},
		{0x1021, "28.46.1000", []string{"4394475"}},
		{0x1021, "28.36.1700", []string{"3327847"}},
		{0x1021, "28.38.1500", []string{"3363753"}},
		{0x1017, "16.45.1020", nil}, // ConnectX-5: its notes were not read
		{0x101d, "22.45", nil},
		{0x101d, "22.45.x", nil},
		{0x101d, " 22.45.1020\n", []string{"4394475"}},
	} {
		var got []string
		for _, fi := range knownIssues(tc.device, tc.version) {
			got = append(got, fi.ID)
		}
		if len(got) != len(tc.want) || (len(got) > 0 && got[0] != tc.want[0]) {
			t.Errorf("%04x %q: %v, want %v", tc.device, tc.version, got, tc.want)
		}
	}
	for _, fi := range firmwareIssues {
		from, ok1 := parseFirmware(fi.From)
		to, ok2 := parseFirmware(fi.To)
		if !ok1 || !ok2 || cmpFirmware(from, to) > 0 || fi.Source == "" || fi.Fix == "" {
			t.Errorf("table row %+v", fi)
		}
	}
}
