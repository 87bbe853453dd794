package firmware

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// Model is a NIC model: its PCI vendor and device IDs.
type Model struct{ Vendor, Device uint16 }

// ParseModel reads "15b3:1021" (lspci -n's vendor:device, hexadecimal).
func ParseModel(s string) (Model, error) {
	vendor, device, ok := strings.Cut(s, ":")
	if !ok {
		return Model{}, fmt.Errorf("model %q: want vendor:device in hexadecimal, as lspci -n prints them (15b3:1021 is a ConnectX-7)", s)
	}
	v, err1 := strconv.ParseUint(vendor, 16, 16)
	d, err2 := strconv.ParseUint(device, 16, 16)
	if err := errors.Join(err1, err2); err != nil || len(vendor) != 4 || len(device) != 4 {
		return Model{}, fmt.Errorf("model %q: want vendor:device as two 4-digit hexadecimal IDs (15b3:1021 is a ConnectX-7)", s)
	}
	return Model{uint16(v), uint16(d)}, nil
}

func (m Model) String() string { return fmt.Sprintf("%04x:%04x", m.Vendor, m.Device) }

// Policy is which firmware an operator refuses on a node's RDMA NICs.
// The zero Policy refuses nothing.
type Policy struct {
	// minimum is the oldest release accepted per model.
	minimum map[Model]release
	// refuse are NVIDIA references of known issues (the table) whose
	// releases are refused.
	refuse []string
}

// release is a parsed version and its text as the operator wrote it.
type release struct {
	v    Version
	text string
}

// NewPolicy builds a Policy from its written form: minimum maps a model
// ("15b3:1021") to its oldest accepted release ("28.39.1002"), and
// refuseIssues lists known issues by NVIDIA's reference ("3363753"),
// each of which the table must have (a typo refuses nothing, silently).
// Every bad entry is named in the error.
func NewPolicy(minimum map[string]string, refuseIssues []string) (Policy, error) {
	var p Policy
	var errs []error
	for _, k := range slices.Sorted(maps.Keys(minimum)) {
		m, err := ParseModel(k)
		if err != nil {
			errs = append(errs, fmt.Errorf("minimum: %w", err))
			continue
		}
		v, ok := ParseVersion(minimum[k])
		if !ok {
			errs = append(errs, fmt.Errorf("minimum[%s]: %q is not a release like 28.39.1002", k, minimum[k]))
			continue
		}
		if _, dup := p.minimum[m]; dup {
			errs = append(errs, fmt.Errorf("minimum: model %s is given twice", m))
			continue
		}
		if p.minimum == nil {
			p.minimum = map[Model]release{}
		}
		p.minimum[m] = release{v, strings.TrimSpace(minimum[k])}
	}
	for i, id := range refuseIssues {
		if !issueKnown(id) {
			errs = append(errs, fmt.Errorf("refuseKnownIssues[%d]: %q is not a known issue Railyard has read (%s)", i, id, strings.Join(issueIDs(), ", ")))
			continue
		}
		if !slices.Contains(p.refuse, id) {
			p.refuse = append(p.refuse, id)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return Policy{}, err
	}
	return p, nil
}

// Refused says why the policy refuses a NIC of model m whose firmware
// reads version, "" when it does not. A version that does not parse (not
// read, or not ConnectX-style) is not refused.
func (p Policy) Refused(m Model, version string) string {
	v, ok := ParseVersion(version)
	if !ok {
		return ""
	}
	version = strings.TrimSpace(version)
	if min, ok := p.minimum[m]; ok && v.Compare(min.v) < 0 {
		return fmt.Sprintf("firmware %s below the minimum %s for %s", version, min.text, m)
	}
	for _, fi := range KnownIssues(m, version) {
		if slices.Contains(p.refuse, fi.ID) {
			return fmt.Sprintf("firmware %s has known issue %s: %s", version, fi.ID, fi.What)
		}
	}
	return ""
}
