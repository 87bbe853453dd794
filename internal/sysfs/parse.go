package sysfs

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// ParseHex parses "0x15b3" or "15b3".
func ParseHex(s string) (uint64, error) {
	s = strings.TrimSpace(s)
	s = strings.TrimPrefix(strings.TrimPrefix(s, "0x"), "0X")
	if s == "" {
		return 0, fmt.Errorf("empty hex value")
	}
	v, err := strconv.ParseUint(s, 16, 64)
	if err != nil {
		return 0, fmt.Errorf("hex value %s: %w", Quote(s), numError(err))
	}
	return v, nil
}

// ParsePortState parses a port's state or phys_state file ("4: ACTIVE",
// "5: LinkUp") into its name ("ACTIVE", "LinkUp").
func ParsePortState(s string) (string, error) {
	s = strings.TrimSpace(s)
	num, name, ok := strings.Cut(s, ":")
	if !ok {
		if s == "" || strings.ContainsAny(s, " \t\r\n") || NeedsEscape(s) {
			return "", fmt.Errorf("port state %s: want \"<N>: <NAME>\" or a bare name", Quote(s))
		}
		return s, nil // some drivers print the bare name
	}
	if _, err := strconv.Atoi(strings.TrimSpace(num)); err != nil {
		return "", fmt.Errorf("port state %s: bad number: %w", Quote(s), numError(err))
	}
	name = strings.TrimSpace(name)
	if name == "" || strings.ContainsAny(name, " \t\r\n") || NeedsEscape(name) {
		return "", fmt.Errorf("port state %s: bad name", Quote(s))
	}
	return name, nil
}

// ParseRate parses a port rate ("400 Gb/sec (4X NDR)", "25 Gb/sec (1X EDR)",
// "2.5 Gb/sec (1X SDR)") into Gb/s.
func ParseRate(s string) (float64, error) {
	s = strings.TrimSpace(s)
	f := strings.Fields(s)
	if len(f) < 2 || !strings.HasPrefix(f[1], "Gb/s") {
		return 0, fmt.Errorf("rate %s: want \"<N> Gb/sec ...\"", Quote(s))
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil || !(v >= 0 && v <= 1e6) { // also rejects NaN
		return 0, fmt.Errorf("rate %s: bad number", Quote(s))
	}
	return v, nil
}

// ParseNUMANode parses numa_node; -1 (or any negative) means unknown.
func ParseNUMANode(s string) (int, error) {
	v, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		return -1, fmt.Errorf("numa_node %s: %w", Quote(s), numError(err))
	}
	if v < 0 {
		return -1, nil
	}
	return v, nil
}

// IsZeroGID reports whether a GID string ("fe80:0000:...") is all zeros.
func IsZeroGID(s string) bool {
	s = strings.TrimSpace(s)
	if s == "" {
		return true
	}
	for _, r := range s {
		if r != '0' && r != ':' {
			return false
		}
	}
	return true
}

// IsLinkLocalGID reports whether a GID string is an IPv6 link-local
// address (fe80::/10): the GID every RoCE port gets from its netdev's
// link-local address, which RoCE v2 cannot route.
func IsLinkLocalGID(s string) bool {
	a, err := netip.ParseAddr(strings.TrimSpace(s))
	return err == nil && a.Is6() && a.IsLinkLocalUnicast()
}

// numError drops the input strconv repeats in its errors (unbounded and
// unescaped: "parsing \"...\": invalid syntax"), keeping only the reason
// (strconv.ErrSyntax or strconv.ErrRange), which the caller quotes with
// Quote.
func numError(err error) error {
	var ne *strconv.NumError
	if errors.As(err, &ne) {
		return ne.Err
	}
	return err
}
