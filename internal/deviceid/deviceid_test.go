package deviceid

import "testing"

func TestShareRoundTrip(t *testing.T) {
	for _, c := range []struct {
		pci string
		k   int
	}{{"0000:18:00.0", 0}, {"10000:00:04.0", 3}, {"0000:af:00.1", 9999}} {
		id := Share(c.pci, c.k)
		pci, k, err := ParseShare(id)
		if err != nil || pci != c.pci || k != c.k {
			t.Errorf("ParseShare(%q) = %q %d %v", id, pci, k, err)
		}
	}
	for _, bad := range []string{"0000:18:00.0", "-s1", "0000:18:00.0-s", "0000:18:00.0-s01", "0000:18:00.0-s1x",
		"0000:18:00.0-s10000", "0000:18:00.0-s-1", "0000:18:00.0-sx", ""} {
		if IsShare(bad) {
			t.Errorf("%q taken for a share", bad)
		}
	}
}

func FuzzParseShare(f *testing.F) {
	for _, s := range []string{"0000:18:00.0-s3", "-s", "a-s0-s1", "x-s0001"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		pci, k, err := ParseShare(id)
		if err != nil {
			return
		}
		if got := Share(pci, k); got != id {
			t.Fatalf("Share(ParseShare(%q)) = %q", id, got)
		}
	})
}

func TestParseShareDoesNotAllocate(t *testing.T) {
	if n := testing.AllocsPerRun(100, func() { _, _, _ = ParseShare("0000:18:00.0-s999") }); n != 0 {
		t.Errorf("ParseShare allocates %.0f times per call", n)
	}
}
