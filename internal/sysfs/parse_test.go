package sysfs

import (
	"strings"
	"testing"
)

func TestParsePortState(t *testing.T) {
	for in, want := range map[string]string{"4: ACTIVE": "ACTIVE", "1: DOWN\n": "DOWN", "5: LinkUp": "LinkUp", "3: Disabled": "Disabled", "ACTIVE": "ACTIVE"} {
		got, err := ParsePortState(in)
		if err != nil || got != want {
			t.Errorf("ParsePortState(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "x: ACTIVE", "4:", "4: "} {
		if got, err := ParsePortState(bad); err == nil {
			t.Errorf("ParsePortState(%q) = %q, want an error", bad, got)
		}
	}
}

func TestParseRate(t *testing.T) {
	for in, want := range map[string]float64{"400 Gb/sec (4X NDR)": 400, "100 Gb/sec (4X EDR)": 100, "2.5 Gb/sec (1X SDR)": 2.5, "25 Gb/sec (1X EDR)\n": 25} {
		got, err := ParseRate(in)
		if err != nil || got != want {
			t.Errorf("ParseRate(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "fast", "400 Mb/sec", "-1 Gb/sec", "NaN Gb/sec", "1e9 Gb/sec"} {
		if got, err := ParseRate(bad); err == nil {
			t.Errorf("ParseRate(%q) = %v, want an error", bad, got)
		}
	}
}

func TestParseNUMANodeAndHex(t *testing.T) {
	if v, err := ParseNUMANode("-1\n"); err != nil || v != -1 {
		t.Errorf("numa -1: %v %v", v, err)
	}
	if v, err := ParseNUMANode("3"); err != nil || v != 3 {
		t.Errorf("numa 3: %v %v", v, err)
	}
	if _, err := ParseNUMANode("zero"); err == nil {
		t.Error("numa zero: no error")
	}
	if v, err := ParseHex("0x15b3\n"); err != nil || v != 0x15b3 {
		t.Errorf("hex: %v %v", v, err)
	}
	if _, err := ParseHex("0x"); err == nil {
		t.Error("empty hex: no error")
	}
	if !IsZeroGID("0000:0000:0000:0000:0000:0000:0000:0000") || IsZeroGID("fe80:0000:0000:0000:0200:00ff:fe00:0001") {
		t.Error("IsZeroGID is wrong")
	}
}

func FuzzParsePortState(f *testing.F) {
	for _, s := range []string{"4: ACTIVE", "1: DOWN", "5: LinkUp", "", ":", "x:y"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := ParsePortState(s)
		if err == nil && (got == "" || strings.ContainsAny(got, "\n")) {
			t.Fatalf("ParsePortState(%q) = %q without error", s, got)
		}
	})
}

func FuzzParseRate(f *testing.F) {
	for _, s := range []string{"400 Gb/sec (4X NDR)", "2.5 Gb/sec", "", "Inf Gb/sec"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := ParseRate(s)
		if err == nil && (v < 0 || v > 1e6 || v != v) {
			t.Fatalf("ParseRate(%q) = %v without error", s, v)
		}
	})
}

func FuzzParseNUMANode(f *testing.F) {
	for _, s := range []string{"0", "-1", "", "99999999999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := ParseNUMANode(s)
		if v < -1 {
			t.Fatalf("ParseNUMANode(%q) = %d", s, v)
		}
		if err != nil && v != -1 {
			t.Fatalf("ParseNUMANode(%q) error with value %d", s, v)
		}
	})
}

func TestIsLinkLocalGID(t *testing.T) {
	for gid, want := range map[string]bool{
		"fe80:0000:0000:0000:0200:00ff:fe00:0001\n": true,
		"febf:0000:0000:0000:0000:0000:0000:0001":   true,  // still fe80::/10
		"0000:0000:0000:0000:0000:ffff:c0a8:0001":   false, // IPv4-mapped
		"2001:0db8:0000:0000:0000:0000:0000:0001":   false,
		"0000:0000:0000:0000:0000:0000:0000:0000":   false,
		"fe80": false,
		"":     false,
	} {
		if got := IsLinkLocalGID(gid); got != want {
			t.Errorf("IsLinkLocalGID(%q) = %v, want %v", gid, got, want)
		}
	}
}
