package pciaddr

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	for _, c := range []struct {
		in        string
		want      Addr
		canonical bool
	}{
		{"0000:18:00.1", Addr{0, 0x18, 0, 1}, true},
		{"0001:ff:1f.7", Addr{1, 0xff, 0x1f, 7}, true},
		{"ffff:00:02.0", Addr{0xffff, 0, 2, 0}, true},
		{"10000:e1:00.3", Addr{0x10000, 0xe1, 0, 3}, true},    // Intel VMD
		{"ffffffff:00:00.0", Addr{0xffffffff, 0, 0, 0}, true}, // widest domain
		{"00000000:1B:00.0", Addr{0, 0x1b, 0, 0}, false},      // nvidia-smi
		{"0000:1B:00.0", Addr{0, 0x1b, 0, 0}, false},          // upper case
		{"0000:1b:0A.0", Addr{0, 0x1b, 0x0a, 0}, false},       // upper case
		{"00010000:00:00.0", Addr{0x10000, 0, 0, 0}, false},   // leading zero on a wide domain
		{"00000:00:00.0", Addr{0, 0, 0, 0}, false},            // five digits for a small domain
		{"0000:00:1f.0", Addr{0, 0, 0x1f, 0}, true},           // the last device
		{"0000:00:10.7", Addr{0, 0, 0x10, 7}, true},
	} {
		a, err := Parse(c.in)
		if err != nil || a != c.want {
			t.Errorf("Parse(%q) = %+v, %v; want %+v", c.in, a, err, c.want)
			continue
		}
		if got := IsCanonical(c.in); got != c.canonical {
			t.Errorf("IsCanonical(%q) = %v, want %v", c.in, got, c.canonical)
		}
		if b, ok := ParseCanonical(c.in); ok != c.canonical || (ok && b != c.want) {
			t.Errorf("ParseCanonical(%q) = %+v, %v", c.in, b, ok)
		}
		if got := a.String(); got != strings.ToLower(c.in) && c.canonical {
			t.Errorf("%q: String() = %q", c.in, got)
		}
	}
}

func TestParseRejects(t *testing.T) {
	for in, reason := range map[string]string{
		"":                  "empty, want DDDD:BB:DD.F",
		"0000:18:20.0":      "device 0x20 is above 0x1f",
		"0000:18:FF.0":      "device 0xff is above 0x1f",
		"0000:18:00.8":      "function 8 is above 7",
		"0000:18:00.f":      "function f is above 7",
		"000:18:00.0":       "domain has 3 characters, want 4 to 8 hex digits",
		"000000000:18:00.0": "domain has 9 characters, want 4 to 8 hex digits",
		"0000:018:00.0":     "bus has 3 characters, want 2 hex digits",
		"0000:18:0.0":       "device has 1 characters, want 2 hex digits",
		"0000:18:00.01":     "function has 2 characters, want 1 hex digits",
		"000g:18:00.0":      "domain is not hex",
		"0000:1x:00.0":      "bus is not hex",
		"0000:18:00.-":      "function is not hex",
		"18:00.1":           "want DDDD:BB:DD.F", // the short form needs ParseOptionalDomain
		"0000-18-00.0":      "want DDDD:BB:DD.F",
		"0000:18:00:0":      "want DDDD:BB:DD.F",
		"0000:18:00.0-s1":   "function has 4 characters, want 1 hex digits",
		" 0000:18:00.0":     "domain is not hex", // no trimming
		"0000:18:00.0\n":    "function has 2 characters, want 1 hex digits",
		"../../../etc:00.0": "want DDDD:BB:DD.F",
		"a:b:c:d":           "want DDDD:BB:DD.F",
		"\xff\xfe:00:00.0":  "domain has 2 characters, want 4 to 8 hex digits",
	} {
		a, err := Parse(in)
		var pe *Error
		if !errors.As(err, &pe) || !errors.Is(err, ErrInvalid) {
			t.Errorf("Parse(%q) = %v, %v; want an *Error", in, a, err)
			continue
		}
		if pe.Reason != reason || pe.Input != in {
			t.Errorf("Parse(%q): reason %q input %q; want %q", in, pe.Reason, pe.Input, reason)
		}
		if IsCanonical(in) {
			t.Errorf("IsCanonical(%q) = true", in)
		}
	}
}

func TestErrorBoundsItsInput(t *testing.T) {
	in := strings.Repeat("\x1b[31m", 1000)
	_, err := Parse(in)
	if err == nil || len(err.Error()) > 200 || strings.Contains(err.Error(), "\x1b") {
		t.Fatalf("error %q: want a short, escaped message", err)
	}
	_, err = Parse("0000:18:20.0")
	if want := `PCI address "0000:18:20.0": device 0x20 is above 0x1f`; err == nil || err.Error() != want {
		t.Errorf("error %v, want %s", err, want)
	}
}

func TestParseOptionalDomain(t *testing.T) {
	for in, want := range map[string]Addr{
		"18:00.1":          {0, 0x18, 0, 1},
		"1B:1f.7":          {0, 0x1b, 0x1f, 7},
		"0000:18:00.1":     {0, 0x18, 0, 1},
		"00000000:1B:00.0": {0, 0x1b, 0, 0},
		"10000:e1:00.3":    {0x10000, 0xe1, 0, 3},
	} {
		if a, err := ParseOptionalDomain(in); err != nil || a != want {
			t.Errorf("ParseOptionalDomain(%q) = %+v, %v; want %+v", in, a, err, want)
		}
	}
	for in, reason := range map[string]string{
		"18:20.1":  "device 0x20 is above 0x1f",
		"18:00.8":  "function 8 is above 7",
		"1:00.1":   "bus has 1 characters, want 2 hex digits",
		"18-00.1":  "want DDDD:BB:DD.F or BB:DD.F",
		"":         "empty, want DDDD:BB:DD.F or BB:DD.F",
		"18:00.1x": "function has 2 characters, want 1 hex digits",
	} {
		_, err := ParseOptionalDomain(in)
		var pe *Error
		if !errors.As(err, &pe) || pe.Reason != reason {
			t.Errorf("ParseOptionalDomain(%q) = %v; want reason %q", in, err, reason)
		}
	}
}

func TestNormalize(t *testing.T) {
	for in, want := range map[string]string{
		"0000:18:00.1":     "0000:18:00.1",
		"00000000:1B:00.0": "0000:1b:00.0",
		"0001:AB:1F.7":     "0001:ab:1f.7",
		"00010000:00:00.0": "10000:00:00.0",
		"FFFFFFFF:FF:1F.7": "ffffffff:ff:1f.7",
	} {
		if got, err := Normalize(in); err != nil || got != want {
			t.Errorf("Normalize(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if got, err := Normalize("0000:18:20.0"); err == nil {
		t.Errorf("Normalize of device 0x20 = %q, want an error", got)
	}
}

func TestString(t *testing.T) {
	for want, a := range map[string]Addr{
		"0000:00:00.0":     {},
		"0001:0a:1f.7":     {1, 0x0a, 0x1f, 7},
		"fffff:ff:00.0":    {0xfffff, 0xff, 0, 0},
		"ffffffff:ff:1f.7": {0xffffffff, 0xff, 0x1f, 7},
		"0000:00:ff.1f":    {0, 0, 0xff, 0x1f}, // not Valid: printed whole, does not parse
	} {
		if got := a.String(); got != want {
			t.Errorf("%+v.String() = %q, want %q", a, got, want)
		}
	}
	if (Addr{Device: 0x20}).Valid() || (Addr{Function: 8}).Valid() || !(Addr{Device: 0x1f, Function: 7}).Valid() {
		t.Error("Valid is wrong")
	}
	if got := string((Addr{Bus: 0x18, Function: 1}).Append([]byte("pci="))); got != "pci=0000:18:00.1" {
		t.Errorf("Append = %q", got)
	}
}

func TestCompareIsNumeric(t *testing.T) {
	in := []string{"10000:00:04.0", "ffff:ff:1f.7", "0000:18:00.1", "0000:18:00.0", "0000:19:00.0", "0000:18:01.0", "0001:00:00.0"}
	want := []string{"0000:18:00.0", "0000:18:00.1", "0000:18:01.0", "0000:19:00.0", "0001:00:00.0", "ffff:ff:1f.7", "10000:00:04.0"}
	var addrs []Addr
	for _, s := range in {
		a, err := Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		addrs = append(addrs, a)
	}
	slices.SortFunc(addrs, Addr.Compare)
	var got []string
	for _, a := range addrs {
		got = append(got, a.String())
	}
	if !slices.Equal(got, want) {
		t.Errorf("sorted %v, want %v", got, want)
	}
	strs := slices.Clone(in)
	slices.SortFunc(strs, CompareStrings)
	if !slices.Equal(strs, want) {
		t.Errorf("CompareStrings sorted %v, want %v", strs, want)
	}
	if c := (Addr{Bus: 1}).Compare(Addr{Bus: 1}); c != 0 {
		t.Errorf("Compare of equal addresses = %d", c)
	}
}

func TestCompareStringsNonAddresses(t *testing.T) {
	in := []string{"zzz", "0000:18:00.0-s1", "0000:1B:00.0", "0000:18:00.0", "", "0000:1b:00.0", "00000000:1b:00.0"}
	want := []string{"0000:18:00.0", "00000000:1b:00.0", "0000:1B:00.0", "0000:1b:00.0", "", "0000:18:00.0-s1", "zzz"}
	slices.SortFunc(in, CompareStrings)
	if !slices.Equal(in, want) {
		t.Errorf("sorted %q, want %q", in, want)
	}
}

func TestRID(t *testing.T) {
	a := Addr{Domain: 0x10000, Bus: 0x18, Device: 0x1f, Function: 6}
	if rid := a.RID(); rid != 0x18<<8|0x1f<<3|6 {
		t.Errorf("RID = %#x", rid)
	}
	if b := FromRID(a.Domain, a.RID()); b != a {
		t.Errorf("FromRID(RID) = %+v, want %+v", b, a)
	}
	// A PF at 0000:18:00.0 with VF offset 2 and stride 1: VF 7 is RID+9.
	if vf := FromRID(0, (Addr{Bus: 0x18}).RID()+9).String(); vf != "0000:18:01.1" {
		t.Errorf("VF address %s", vf)
	}
}

func TestHostBridge(t *testing.T) {
	for in, c := range map[string]struct {
		want      HostBridge
		canonical bool
	}{
		"pci0000:00":     {HostBridge{0, 0}, true},
		"pci0000:e0":     {HostBridge{0, 0xe0}, true},
		"pci10000:00":    {HostBridge{0x10000, 0}, true},
		"pciffffffff:ff": {HostBridge{0xffffffff, 0xff}, true},
		"pci0000:E0":     {HostBridge{0, 0xe0}, false},
		"pci00000000:00": {HostBridge{0, 0}, false},
	} {
		h, err := ParseHostBridge(in)
		if err != nil || h != c.want {
			t.Errorf("ParseHostBridge(%q) = %+v, %v; want %+v", in, h, err, c.want)
		}
		if IsCanonicalHostBridge(in) != c.canonical {
			t.Errorf("IsCanonicalHostBridge(%q) = %v", in, !c.canonical)
		}
		if c.canonical && h.String() != in {
			t.Errorf("%q prints as %q", in, h.String())
		}
	}
	for in, reason := range map[string]string{
		"pci000:00":       "domain has 3 characters, want 4 to 8 hex digits",
		"pci0000:0":       "bus has 1 characters, want 2 hex digits",
		"pci0000:0g":      "bus is not hex",
		"pcig000:00":      "domain is not hex",
		"PCI0000:00":      "want pciDDDD:BB",
		"0000:00":         "want pciDDDD:BB",
		"pci0000:00:00.0": "bus has 7 characters, want 2 hex digits",
		"":                "want pciDDDD:BB",
	} {
		_, err := ParseHostBridge(in)
		var pe *Error
		if !errors.As(err, &pe) || pe.Reason != reason || !strings.HasPrefix(err.Error(), "PCI host bridge ") {
			t.Errorf("ParseHostBridge(%q) = %v; want reason %q", in, err, reason)
		}
		if IsCanonicalHostBridge(in) {
			t.Errorf("IsCanonicalHostBridge(%q) = true", in)
		}
	}
	if c := (HostBridge{Domain: 0x10000}).Compare(HostBridge{Domain: 0xffff, Bus: 0xff}); c != 1 {
		t.Errorf("Compare = %d, want 1", c)
	}
}

// TestParseCanonicalDoesNotAllocate: ParseCanonical is on the
// GetPreferredAllocation path (thousands of IDs a call).
func TestParseCanonicalDoesNotAllocate(t *testing.T) {
	ids := []string{"0000:18:00.1", "10000:e1:1f.7", "0000:18:00.1-s3", "tok-a-n0-1", "0000:1B:00.0"}
	n := testing.AllocsPerRun(100, func() {
		for _, id := range ids {
			ParseCanonical(id)
			CompareStrings(id, ids[0])
		}
	})
	if n != 0 {
		t.Errorf("%v allocations per run, want 0", n)
	}
}

func BenchmarkParseCanonical(b *testing.B) {
	ids := []string{"0000:18:00.1", "0000:c1:1f.7", "10000:e1:00.0", "0000:18:00.1-s3"}
	for b.Loop() {
		for _, id := range ids {
			ParseCanonical(id)
		}
	}
}

// TestSortByAddress: SortByAddress orders as CompareStrings does.
func TestSortByAddress(t *testing.T) {
	in := []string{"zzz", "10000:00:04.0", "0000:18:00.0-s1", "ffff:ff:1f.7", "0000:1B:00.0", "0000:18:00.0", "", "0000:1b:00.0", "00000000:1b:00.0", "0000:18:00.1"}
	want := slices.Clone(in)
	slices.SortFunc(want, CompareStrings)
	type dev struct{ addr string }
	var devs []dev
	for _, s := range in {
		devs = append(devs, dev{s})
	}
	SortByAddress(devs, func(d dev) string { return d.addr })
	var got []string
	for _, d := range devs {
		got = append(got, d.addr)
	}
	if !slices.Equal(got, want) {
		t.Errorf("SortByAddress = %q, want %q", got, want)
	}
	if want[0] != "0000:18:00.0" || want[len(want)-1] != "zzz" {
		t.Errorf("CompareStrings order %q", want)
	}
}

// TestIsCanonical: the sysfs names the kernel gives functions and host
// bridges (the cases sysfs.ValidPCIAddress and ValidHostBridge had).
func TestIsCanonical(t *testing.T) {
	for s, want := range map[string]bool{
		"0000:18:00.1": true, "10000:00:02.0": true, "10000:e1:00.1": true, "ffffffff:00:00.0": true, "abcd:01:1f.7": true,
		"0000:18:00.8": false, "0000:18:20.0": false, "../../etc": false, "00000:00:02.0": false, "100000000:00:00.0": false,
		"1000:0:00.0": false, "10000:00:02.0/": false, "10000:00:02": false, "0000:18:0A.0": false,
	} {
		if IsCanonical(s) != want {
			t.Errorf("IsCanonical(%q) = %v, want %v", s, !want, want)
		}
	}
	for s, want := range map[string]bool{"pci0000:00": true, "pci10000:00": true, "pci0000:0": false, "pci00000:00": false, "0000:00": false} {
		if IsCanonicalHostBridge(s) != want {
			t.Errorf("IsCanonicalHostBridge(%q) = %v, want %v", s, !want, want)
		}
	}
}

// FuzzSortByAddress: SortByAddress sorts as CompareStrings does and keeps
// every element (its in-place permutation loses and repeats none).
func FuzzSortByAddress(f *testing.F) {
	f.Add("10000:00:04.0,ffff:ff:1f.7,0000:18:00.1,0000:18:00.0,zzz,,0000:1B:00.0,0000:18:00.0")
	f.Add("b,a,0000:00:00.0")
	f.Fuzz(func(t *testing.T, list string) {
		in := strings.Split(list, ",")
		type item struct {
			s string
			n int
		}
		var items []item
		for i, s := range in {
			items = append(items, item{s, i})
		}
		SortByAddress(items, func(x item) string { return x.s })
		seen := make([]bool, len(in))
		for i, x := range items {
			if seen[x.n] || in[x.n] != x.s {
				t.Fatalf("item %d (%q) lost or repeated: %v", x.n, x.s, items)
			}
			seen[x.n] = true
			if i > 0 && CompareStrings(items[i-1].s, x.s) > 0 {
				t.Fatalf("out of order at %d: %q > %q", i, items[i-1].s, x.s)
			}
		}
	})
}
