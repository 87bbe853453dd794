package termsafe

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Escape makes s safe to print on a terminal: C0 and C1 control
// characters (ESC, and with it CSI and OSC sequences, BEL, tab, newline),
// DEL and bytes that are not UTF-8 become \xNN; bidirectional overrides
// and isolates (U+202A-U+202E, U+2066-U+2069, U+061C), zero-width
// characters (U+200B-U+200F, U+2060, U+FEFF) and line separators
// (U+2028, U+2029) become \uNNNN. Everything else, backslashes included,
// is printed as it is; a string that needs no escape is returned
// unchanged.
func Escape(s string) string {
	if !needsEscape(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case control(r):
			fmt.Fprintf(&b, `\x%02x`, r)
		case invisible(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// needsEscape reports whether Escape changes s.
func needsEscape(s string) bool {
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && size == 1) || control(r) || invisible(r) {
			return true
		}
		i += size
	}
	return false
}

// control reports the C0 and C1 control characters and DEL.
func control(r rune) bool {
	return r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f)
}

// invisible reports the characters that reorder or hide text.
func invisible(r rune) bool {
	switch {
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069, r == 0x061c:
		return true
	case r >= 0x200b && r <= 0x200f, r == 0x2060, r == 0xfeff:
		return true
	case r == 0x2028, r == 0x2029:
		return true
	}
	return false
}
