package sim

import (
	"errors"
	"slices"
	"testing"

	"github.com/railyard-io/railyard/internal/topology"
)

func TestParseMix(t *testing.T) {
	got, err := ParseMix("1:4, 2:2,8:0.5")
	if err != nil {
		t.Fatal(err)
	}
	if want := []MixEntry{{GPUs: 1, Weight: 4}, {GPUs: 2, Weight: 2}, {GPUs: 8, Weight: 0.5}}; !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	for _, name := range MixNames() {
		if _, err := ParseMix(name); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	for _, bad := range []string{"", "1", "0:1", "x:1", "1:-1", "1:NaN", "1:y", "2:Inf"} {
		if _, err := ParseMix(bad); !errors.Is(err, ErrConfig) {
			t.Errorf("ParseMix(%q): err %v, want ErrConfig", bad, err)
		}
	}
}

func TestParseBandwidth(t *testing.T) {
	bw, err := ParseBandwidth("pix=12, PHB=4")
	if err != nil {
		t.Fatal(err)
	}
	if bw[topology.PIX] != 12 || bw[topology.PHB] != 4 || bw[topology.PXB] != 10.5 || bw[topology.SYS] != 3.5 {
		t.Errorf("got %v", bw)
	}
	if s := DefaultBandwidth().String(); s != "PIX=10.5,PXB=10.5,PHB=3.5,NODE=3.5,SYS=3.5" {
		t.Errorf("default prints %q", s)
	}
	back, err := ParseBandwidth(bw.String())
	if err != nil || back.String() != bw.String() {
		t.Errorf("round trip: %v, %v", back, err)
	}
	for _, bad := range []string{"PIX", "FOO=1", "PIX=-1", "PIX=x", "PIX=NaN"} {
		if _, err := ParseBandwidth(bad); !errors.Is(err, ErrConfig) {
			t.Errorf("ParseBandwidth(%q): err %v, want ErrConfig", bad, err)
		}
	}
}

func FuzzParseBandwidth(f *testing.F) {
	for _, s := range []string{"PIX=10.5,PXB=10.5,PHB=3.5,NODE=3.5,SYS=3.5", "", "=", "pix=1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		bw, err := ParseBandwidth(s)
		if err != nil {
			return
		}
		for c, v := range bw {
			if v < 0 {
				t.Fatalf("ParseBandwidth(%q) accepted %v=%g", s, c, v)
			}
		}
	})
}
