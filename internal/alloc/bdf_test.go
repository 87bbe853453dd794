package alloc

import (
	"fmt"
	"testing"

	"github.com/railyard-io/railyard/internal/topology"
)

func TestParseBDF(t *testing.T) {
	for _, c := range []struct {
		in       string
		dom, bdf uint16
		ok       bool
	}{
		{"0000:18:00.0", 0, 0x18 << 8, true},
		{"0000:18:00.1", 0, 0x18<<8 | 1, true},
		{"0001:ff:1f.7", 1, 0xff<<8 | 31<<3 | 7, true},
		{"0000:18:20.0", 0, 0, false}, // device > 31
		{"0000:18:00.8", 0, 0, false}, // function > 7
		{"0000:18:0A.0", 0, 0, false}, // upper case is not canonical
		{"10000:00:00.0", 0, 0, false},
		{"", 0, 0, false},
		{"0000-18:00.0", 0, 0, false},
	} {
		dom, bdf, ok := parseBDF(c.in)
		if ok != c.ok || (ok && (dom != c.dom || bdf != c.bdf)) {
			t.Errorf("parseBDF(%q) = %x, %x, %v; want %x, %x, %v", c.in, dom, bdf, ok, c.dom, c.bdf, c.ok)
		}
	}
}

// FuzzParseBDF checks that parseBDF never panics and only accepts strings
// that print back to themselves.
func FuzzParseBDF(f *testing.F) {
	for _, s := range []string{"0000:18:00.0", "ffff:ff:1f.7", "0000:18:20.0", "", "xxxx:yy:zz.w"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		dom, bdf, ok := parseBDF(s)
		if !ok {
			return
		}
		if back := fmt.Sprintf("%04x:%02x:%02x.%x", dom, bdf>>8, bdf>>3&31, bdf&7); back != s {
			t.Fatalf("parseBDF(%q) round-trips to %q", s, back)
		}
	})
}

// TestLookupFallsBack checks that IDs outside the fast path still resolve.
func TestLookupFallsBack(t *testing.T) {
	topo := dgx1Like(nicOpts{vfs: 2})
	ix := NewIndex(topo)
	for _, d := range ix.Devices() {
		i, ok := ix.lookup(d)
		if !ok || ix.devs[i].addr != d {
			t.Fatalf("lookup(%q) = %d, %v", d, i, ok)
		}
	}
	if _, ok := ix.lookup("0000:00:00.0"); ok {
		t.Error("found a device that does not exist")
	}
}

func TestRankConstants(t *testing.T) {
	if unknownRank != topology.ClassUnknown.Rank() {
		t.Errorf("unknownRank %d, topology says %d", unknownRank, topology.ClassUnknown.Rank())
	}
	if unhealthyRank <= unknownRank {
		t.Error("an unhealthy device must rank after an unknown one")
	}
}
