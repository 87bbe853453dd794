package pciaddr

import (
	"regexp"
	"strings"
	"testing"
)

// The rules as regular expressions, written independently of the scanner:
// the fuzz tests check that both agree on every input.
var (
	anyRE       = regexp.MustCompile(`^[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[01][0-9a-fA-F]\.[0-7]$`)
	shortRE     = regexp.MustCompile(`^[0-9a-fA-F]{2}:[01][0-9a-fA-F]\.[0-7]$`)
	canonicalRE = regexp.MustCompile(`^(?:[0-9a-f]{4}|[1-9a-f][0-9a-f]{4,7}):[0-9a-f]{2}:[01][0-9a-f]\.[0-7]$`)
	bridgeRE    = regexp.MustCompile(`^pci[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}$`)
	canonBrRE   = regexp.MustCompile(`^pci(?:[0-9a-f]{4}|[1-9a-f][0-9a-f]{4,7}):[0-9a-f]{2}$`)
)

// FuzzParse: parsing never panics; what parses prints to a canonical form
// that parses back to the same address; the canonical check holds exactly
// for strings that are their own canonical form; every parser agrees with
// the rules written as regular expressions.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"0000:18:00.1", "00000000:1B:00.0", "10000:e1:1f.7", "ffffffff:ff:1f.7", "00010000:00:00.0",
		"18:00.1", "0000:18:20.0", "0000:18:00.8", "", "0000:18:00.0-s3", "pci0000:00", "pci10000:e0",
		"\xff\xff\xff\xff:00:00.0", "0000:18:00.", ":::.",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a, err := Parse(s)
		if (err == nil) != anyRE.MatchString(s) {
			t.Fatalf("Parse(%q) = %v, %v; the rule says %v", s, a, err, anyRE.MatchString(s))
		}
		if err != nil {
			if len(err.Error()) > 4*maxQuoted+100 { // every byte quoted as \xNN, plus the reason
				t.Fatalf("Parse(%q): error of %d bytes", s, len(err.Error()))
			}
		} else {
			c := a.String()
			b, err := Parse(c)
			if err != nil || b != a || !IsCanonical(c) || !a.Valid() {
				t.Fatalf("Parse(%q) = %+v prints %q, which parses to %+v, %v", s, a, c, b, err)
			}
			if n, err := Normalize(s); err != nil || n != c {
				t.Fatalf("Normalize(%q) = %q, %v; want %q", s, n, err, c)
			}
			if IsCanonical(s) != (c == s) {
				t.Fatalf("IsCanonical(%q) = %v, its canonical form is %q", s, IsCanonical(s), c)
			}
			if CompareStrings(s, c) != 0 && !strings.EqualFold(s, c) && len(s) == len(c) {
				t.Fatalf("CompareStrings(%q, %q) = %d", s, c, CompareStrings(s, c))
			}
		}
		if IsCanonical(s) != canonicalRE.MatchString(s) {
			t.Fatalf("IsCanonical(%q) = %v; the rule says %v", s, IsCanonical(s), !IsCanonical(s))
		}
		o, err := ParseOptionalDomain(s)
		if (err == nil) != (anyRE.MatchString(s) || shortRE.MatchString(s)) {
			t.Fatalf("ParseOptionalDomain(%q) = %v, %v", s, o, err)
		}
		if err == nil && shortRE.MatchString(s) {
			if full, err := Parse("0000:" + s); err != nil || full != o {
				t.Fatalf("ParseOptionalDomain(%q) = %+v, the full form %+v, %v", s, o, full, err)
			}
		}
		if CompareStrings(s, s) != 0 {
			t.Fatalf("CompareStrings(%q, itself) != 0", s)
		}

		h, err := ParseHostBridge(s)
		if (err == nil) != bridgeRE.MatchString(s) {
			t.Fatalf("ParseHostBridge(%q) = %v, %v", s, h, err)
		}
		if IsCanonicalHostBridge(s) != canonBrRE.MatchString(s) {
			t.Fatalf("IsCanonicalHostBridge(%q) = %v", s, IsCanonicalHostBridge(s))
		}
		if err == nil {
			if g, err := ParseHostBridge(h.String()); err != nil || g != h || !IsCanonicalHostBridge(h.String()) {
				t.Fatalf("ParseHostBridge(%q) = %+v prints %q: %+v, %v", s, h, h.String(), g, err)
			}
		}
	})
}

// FuzzCompareStrings: CompareStrings is antisymmetric and agrees with
// Compare on addresses.
func FuzzCompareStrings(f *testing.F) {
	f.Add("0000:18:00.0", "10000:00:00.0")
	f.Add("ffff:ff:1f.7", "10000:00:04.0")
	f.Add("zzz", "0000:18:00.0")
	f.Add("0000:1B:00.0", "00000000:1b:00.0")
	f.Fuzz(func(t *testing.T, x, y string) {
		c := CompareStrings(x, y)
		if CompareStrings(y, x) != -c {
			t.Fatalf("CompareStrings(%q, %q) = %d, reversed %d", x, y, c, CompareStrings(y, x))
		}
		a, errA := Parse(x)
		b, errB := Parse(y)
		if errA == nil && errB == nil && a != b && a.Compare(b) != c {
			t.Fatalf("CompareStrings(%q, %q) = %d, Compare = %d", x, y, c, a.Compare(b))
		}
		if c == 0 && x != y {
			t.Fatalf("CompareStrings(%q, %q) = 0", x, y)
		}
	})
}
