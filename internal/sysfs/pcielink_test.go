package sysfs

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseLinkSpeed(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]float64{"16.0 GT/s PCIe": 16, "2.5 GT/s PCIe": 2.5, "8 GT/s": 8, "32.0 GT/s PCIe\n": 32, "64.0 GT/s PCIe": 64} {
		got, err := ParseLinkSpeed(in)
		if err != nil || got != want {
			t.Errorf("ParseLinkSpeed(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "16", "16 Gb/s", "-8 GT/s", "0 GT/s", "NaN GT/s", "Inf GT/s", "1e9 GT/s"} {
		if got, err := ParseLinkSpeed(bad); err == nil {
			t.Errorf("ParseLinkSpeed(%q) = %v, want an error", bad, got)
		}
	}
	if _, err := ParseLinkSpeed("Unknown"); !errors.Is(err, ErrLinkUnknown) {
		t.Errorf("ParseLinkSpeed(Unknown) = %v, want ErrLinkUnknown", err)
	}
}

func FuzzParseLinkSpeed(f *testing.F) {
	for _, s := range []string{"16.0 GT/s PCIe", "2.5 GT/s", "Unknown", "", "NaN GT/s", "x16"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if v, err := ParseLinkSpeed(s); err == nil && (math.IsNaN(v) || v <= 0 || v > 1000) {
			t.Fatalf("ParseLinkSpeed(%q) = %v without error", s, v)
		}
		if v, err := ParseLinkWidth(s); err == nil && (v < 0 || v > 32) {
			t.Fatalf("ParseLinkWidth(%q) = %v without error", s, v)
		}
	})
}

func TestPCIeLinkOf(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	dev := filepath.Join(root, "bus/pci/devices/0000:17:00.0")
	if err := os.MkdirAll(dev, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, v := range map[string]string{"current_link_speed": "8.0 GT/s PCIe\n", "max_link_speed": "16.0 GT/s PCIe\n", "current_link_width": "8\n", "max_link_width": "16\n"} {
		if err := os.WriteFile(filepath.Join(dev, name), []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := New(root).PCIeLinkOf("0000:17:00.0")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(PCIeLink{Speed: 8, MaxSpeed: 16, Width: 8, MaxWidth: 16}, got); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
	if !got.SpeedDegraded() || !got.WidthDegraded() || got.String() != "8 GT/s x8 (of 16 GT/s x16)" {
		t.Errorf("%v: degraded %v %v", got, got.SpeedDegraded(), got.WidthDegraded())
	}
	if _, err := New(root).PCIeLinkOf("0000:18:00.0"); !errors.Is(err, ErrNotFound) {
		t.Errorf("missing device: %v, want ErrNotFound", err)
	}
}
