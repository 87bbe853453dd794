package termsafe

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestEscape(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{in: "su2-leaf5", want: "su2-leaf5"},
		{in: "0x98039b0300a1b2c3", want: "0x98039b0300a1b2c3"},
		{in: "Quantum Mellanox Technologies", want: "Quantum Mellanox Technologies"},
		{in: "leaf-é/交换机", want: "leaf-é/交换机"},
		{in: "\x1b[2J\x1b[31mleaf", want: `\x1b[2J\x1b[31mleaf`},                             // CSI: clear, colour
		{in: "\x1b]0;pwned\x07leaf", want: `\x1b]0;pwned\x07leaf`},                           // OSC: window title, BEL
		{in: "\x1b]8;;http://x\x1b\\leaf", want: `\x1b]8;;http://x\x1b\leaf`},                // OSC 8 hyperlink
		{in: "a\tb\nc\rd\x00e\x7f", want: `a\x09b\x0ac\x0dd\x00e\x7f`},                       // tab breaks the table's columns
		{in: "\u009b31mleaf\u0085", want: `\x9b31mleaf\x85`},                                 // C1: CSI, NEL
		{in: "leaf\u202eevil\u202c", want: `leaf\u202eevil\u202c`},                           // bidi override
		{in: "\u2066a\u2067b\u2068c\u2069\u061c", want: `\u2066a\u2067b\u2068c\u2069\u061c`}, // isolates
		{in: "le\u200baf\u200d\u200f\u2060\ufeff", want: `le\u200baf\u200d\u200f\u2060\ufeff`},
		{in: "a\u2028b\u2029", want: `a\u2028b\u2029`},
		{in: "bad\xffutf8\xc3", want: `bad\xffutf8\xc3`},
		{in: "", want: ""},
	} {
		if diff := cmp.Diff(tc.want, Escape(tc.in)); diff != "" {
			t.Errorf("Escape(%q) (-want +got):\n%s", tc.in, diff)
		}
	}
}

func FuzzEscape(f *testing.F) {
	f.Add("leaf\x1b]0;x\x07\u202e")
	f.Fuzz(func(t *testing.T, s string) {
		out := Escape(s)
		if needsEscape(out) {
			t.Errorf("Escape(%q) = %q still holds a character to escape", s, out)
		}
	})
}
