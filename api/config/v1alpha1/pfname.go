package v1alpha1

import (
	"fmt"
	"strconv"
	"strings"
)

// maxVFIndex bounds VF indexes in a range (PCIe allows at most 65535 VFs).
const maxVFIndex = 65535

// PFName is a parsed PF name selector: "ibp24s0" or "ibp24s0#0-7,9".
type PFName struct {
	// Name is the PF's netdev name.
	Name string
	// Ranges are inclusive VF index ranges; empty means every VF.
	Ranges []VFRange
}

// VFRange is an inclusive range of VF indexes.
type VFRange struct{ First, Last int }

// Contains reports whether the VF index idx is selected.
func (p PFName) Contains(idx int) bool {
	if len(p.Ranges) == 0 {
		return true
	}
	for _, r := range p.Ranges {
		if idx >= r.First && idx <= r.Last {
			return true
		}
	}
	return false
}

// ParsePFName parses "name" or "name#ranges" where ranges is a comma
// list of "N" or "N-M" with N <= M.
func ParsePFName(s string) (PFName, error) {
	name, spec, hasSpec := strings.Cut(s, "#")
	if name == "" {
		return PFName{}, fmt.Errorf("empty interface name in %q", s)
	}
	if len(name) > 15 || strings.ContainsAny(name, "/ \t\n\x00:") {
		return PFName{}, fmt.Errorf("%q is not a valid interface name", name)
	}
	p := PFName{Name: name}
	if !hasSpec {
		return p, nil
	}
	if spec == "" {
		return PFName{}, fmt.Errorf("empty VF range after '#' in %q", s)
	}
	for _, part := range strings.Split(spec, ",") {
		first, last, isRange := strings.Cut(part, "-")
		a, err := parseVFIndex(first)
		if err != nil {
			return PFName{}, fmt.Errorf("VF range %q: %w", part, err)
		}
		b := a
		if isRange {
			if b, err = parseVFIndex(last); err != nil {
				return PFName{}, fmt.Errorf("VF range %q: %w", part, err)
			}
		}
		if b < a {
			return PFName{}, fmt.Errorf("VF range %q: end before start", part)
		}
		p.Ranges = append(p.Ranges, VFRange{First: a, Last: b})
	}
	return p, nil
}

func parseVFIndex(s string) (int, error) {
	if s == "" || strings.TrimLeft(s, "0123456789") != "" {
		return 0, fmt.Errorf("%q is not a VF index", s)
	}
	v, err := strconv.Atoi(s)
	if err != nil || v > maxVFIndex {
		return 0, fmt.Errorf("%q is not a VF index (0-%d)", s, maxVFIndex)
	}
	return v, nil
}
