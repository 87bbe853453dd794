package sysfs

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// maxQuoted bounds how many bytes of an attribute value an error message
// quotes: a value is untrusted input and a message is one line.
const maxQuoted = 64

// Printable returns a name read from sysfs (a netdev, an RDMA device, a
// directory entry) as it can be printed on one line: control characters,
// other non-printable runes, bytes that are not UTF-8 and the backslash
// are escaped Go-style (\x1b, \xff, \u200b, \\), so the name shows as what
// it is rather than moving the cursor or turning into U+FFFD. A name that
// needs no escape is returned unchanged.
func Printable(s string) string {
	if !NeedsEscape(s) {
		return s
	}
	return escape(s, true)
}

// Clip makes a message safe to print as one line of at most max bytes
// (plus a note of the length cut off): control characters, other
// non-printable runes and bytes that are not UTF-8 are escaped as by
// Printable, backslashes are kept as they are (messages quote values with
// Quote, which escapes its own). Warnings built from sysfs contents pass
// through it so that no file can flood or garble a log.
func Clip(s string, max int) string {
	total, cut := len(s), false
	if len(s) > max {
		s, cut = s[:runeCut(s, max)], true
	}
	if hasUnprintable(s) {
		s = escape(s, false)
		if len(s) > max {
			s, cut = s[:runeCut(s, max)], true
		}
	}
	if cut {
		return fmt.Sprintf("%s... (%d bytes in all)", s, total)
	}
	return s
}

// runeCut returns the largest index <= max that does not split a rune.
func runeCut(s string, max int) int {
	if max >= len(s) {
		return len(s)
	}
	for max > 0 && !utf8.RuneStart(s[max]) {
		max--
	}
	return max
}

func hasUnprintable(s string) bool {
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && size == 1) || !unicode.IsPrint(r) {
			return true
		}
		i += size
	}
	return false
}

func escape(s string, backslash bool) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\\' && backslash:
			b.WriteString(`\\`)
		case unicode.IsPrint(r):
			b.WriteString(s[i : i+size])
		case r < utf8.RuneSelf:
			fmt.Fprintf(&b, `\x%02x`, r)
		case r <= 0xffff:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			fmt.Fprintf(&b, `\U%08x`, r)
		}
		i += size
	}
	return b.String()
}

// NeedsEscape reports whether Printable changes s: the name has control
// characters, non-printable runes, bytes that are not UTF-8 or a
// backslash.
func NeedsEscape(s string) bool {
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == '\\' || (r == utf8.RuneError && size == 1) || !unicode.IsPrint(r) {
			return true
		}
		i += size
	}
	return false
}

// Quote quotes an attribute value for an error message: Go-quoted (every
// control character and invalid byte escaped) and cut to its first 64
// bytes, with the full length said, so a huge or binary file gives one
// short line.
func Quote(s string) string {
	if len(s) <= maxQuoted {
		return strconv.Quote(s)
	}
	return fmt.Sprintf("%s... (%d bytes)", strconv.Quote(s[:runeCut(s, maxQuoted)]), len(s))
}
