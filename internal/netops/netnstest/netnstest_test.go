package netnstest

import (
	"strings"
	"testing"
)

// Names are at most 15 bytes, start with the fixed-width process part,
// and never repeat within a process's first 1296 names.
func TestNamesAreUniqueAndFit(t *testing.T) {
	seen := map[string]bool{}
	var prefix string
	for i := range 36 * 36 {
		n := Name("nspeer")
		if len(n) > 15 {
			t.Fatalf("%q is %d bytes", n, len(n))
		}
		if i == 0 {
			prefix = n[:7]
		}
		if !strings.HasPrefix(n, prefix) || seen[n] {
			t.Fatalf("name %d %q: prefix %q, seen before %v", i, n, prefix, seen[n])
		}
		seen[n] = true
	}
}
