package ibneighbor

// smpquery's output format, read from linux-rdma/rdma-core (commit
// 691953d8d, November 2026):
//
//   - infiniband-diags/smpquery.c, node_info(): a header line
//     "# Node info: <portid2str>" ("DR path slid 65535; dlid 65535; 0,1"
//     for -D 0,1, libibmad/portid.c) and then mad_dump_nodeinfo's fields.
//   - libibmad/dump.c, _dump_fields(): one line per field, in the order
//     of libibmad/fields.c's NodeInfo table: BaseVers, ClassVers,
//     NodeType, NumPorts, SystemGuid, Guid (the node GUID), PortGuid,
//     PartCap, DevId, Revision, LocalPort, VendorId.
//   - libibmad/fields.c, _mad_dump_field(): a line is the field's name,
//     ":", dots up to column 33 (32 minus the name's length) and the
//     value: "Guid:............................0x0002c9030000abcd".
//   - libibmad/dump.c: mad_dump_uint prints decimal ("17"), mad_dump_hex
//     "0x" and two lowercase digits per byte of the field (a GUID: 16),
//     mad_dump_node_type "Channel Adapter", "Switch", "Router" or
//     "?(<n>)?"; mad_dump_portstate "NoChange", "Down", "Initialize",
//     "Armed", "Active" or "?(<n>)"; mad_dump_physportstate "Sleep",
//     "Polling", "Disabled", "PortConfigurationTraining", "LinkUp",
//     "LinkErrorRecovery", "PhyTest", ...; mad_dump_portcapmask continues
//     on lines starting with tabs.
//   - infiniband-diags/smpquery.c, node_desc(): one line "Node
//     Description:" + dots + the description, the dots counted from the
//     description's length (32 minus it, or one dot from 32 bytes on).
//     The description is NodeDesc with non-printable bytes made spaces
//     (util/node_name_map.c clean_nodedesc), or the node's name in the
//     host's ib-node-name-map where it has one.
//   - infiniband-diags/ibdiag_common.c, ibexit(): a failure prints
//     "smpquery: iberror: failed: <why>" on stdout and exits -1; libibmad's
//     warnings ("ibwarn: [pid] mad_rpc: _do_madrpc failed; dport (...)")
//     go to stderr.
//
// This is a reading of the format, not a copy of that code.

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// ErrBadOutput is returned (wrapped) for output that is not smpquery's.
var ErrBadOutput = errors.New("not smpquery's output")

// maxParse bounds the output a parser reads: Exec's output bound.
const maxParse = 64 << 10

// dotColumn is where libibmad pads a field's name with dots to.
const dotColumn = 32

// maxText bounds a description (NodeDesc is 64 bytes; a name map's name
// may be longer).
const maxText = 255

// Node types, as smpquery prints NodeInfo.NodeType.
const (
	ChannelAdapter = "Channel Adapter"
	Switch         = "Switch"
	Router         = "Router"
)

// NodeInfo is what smpquery nodeinfo says about a node.
type NodeInfo struct {
	// NodeType is "Switch", "Channel Adapter", "Router" or, for a type
	// libibmad does not know, "?(<n>)?".
	NodeType string
	// NumPorts is the node's number of physical ports.
	NumPorts int
	// GUID is the node GUID (NodeInfo.NodeGUID, printed as "Guid").
	GUID uint64
	// LocalPort is the node's port the query arrived on: for the node at
	// hop 1, the port the cable from our port lands on.
	LocalPort int
}

// PortState is the local port's state from smpquery portinfo.
type PortState struct {
	// LinkState is "Down", "Initialize", "Armed", "Active", ...
	LinkState string
	// PhysLinkState is "Polling", "Disabled", "LinkUp", ...
	PhysLinkState string
}

// FormatGUID writes a GUID the way smpquery does and Railyard shows it:
// 0x and 16 lowercase hex digits.
func FormatGUID(g uint64) string { return fmt.Sprintf("0x%016x", g) }

// ParseNodeInfo reads `smpquery nodeinfo`'s output. It never panics:
// anything else (garbage, a truncated dump, a field twice, an iberror
// line, a value out of range) is an error.
func ParseNodeInfo(out []byte) (NodeInfo, error) {
	f, err := fields(out, false)
	if err != nil {
		return NodeInfo{}, err
	}
	var ni NodeInfo
	if ni.NodeType, err = f.nodeType("NodeType"); err != nil {
		return NodeInfo{}, err
	}
	if ni.GUID, err = f.guid("Guid"); err != nil {
		return NodeInfo{}, err
	}
	if ni.LocalPort, err = f.port("LocalPort", 1); err != nil {
		return NodeInfo{}, err
	}
	if ni.NumPorts, err = f.port("NumPorts", 1); err != nil {
		return NodeInfo{}, err
	}
	if ni.LocalPort > ni.NumPorts {
		return NodeInfo{}, fmt.Errorf("%w: LocalPort %d above NumPorts %d", ErrBadOutput, ni.LocalPort, ni.NumPorts)
	}
	return ni, nil
}

// ParseNodeDesc reads `smpquery nodedesc`'s one line and returns the
// description (trimmed of spaces; non-printable text escaped; at most 255
// bytes). A description that itself begins with dots loses them: the
// padding cannot tell them apart.
func ParseNodeDesc(out []byte) (string, error) {
	if len(out) > maxParse {
		return "", fmt.Errorf("%w: %d bytes, over %d", ErrBadOutput, len(out), maxParse)
	}
	const prefix = "Node Description:"
	var desc string
	found := false
	for i, line := range strings.Split(string(out), "\n") {
		if line == "" {
			continue
		}
		rest, ok := strings.CutPrefix(line, prefix)
		if !ok {
			if why := iberror(line); why != "" {
				return "", fmt.Errorf("smpquery said %q", why)
			}
			return "", fmt.Errorf("%w: line %d is not a node description: %q", ErrBadOutput, i+1, clip(line))
		}
		if found {
			return "", fmt.Errorf("%w: two node descriptions", ErrBadOutput)
		}
		found = true
		switch {
		case len(rest) > dotColumn && rest[0] == '.':
			desc = rest[1:] // 32 bytes or more: one dot
		case len(rest) == dotColumn && rest[0] == '.':
			desc = strings.TrimLeft(rest, ".")
		default:
			return "", fmt.Errorf("%w: node description padding cut short: %q", ErrBadOutput, clip(line))
		}
	}
	if !found {
		return "", fmt.Errorf("%w: no node description", ErrBadOutput)
	}
	return text(desc), nil
}

// ParsePortState reads the link states from `smpquery portinfo`'s output.
func ParsePortState(out []byte) (PortState, error) {
	f, err := fields(out, true)
	if err != nil {
		return PortState{}, err
	}
	var ps PortState
	if ps.LinkState, err = f.word("LinkState"); err != nil {
		return PortState{}, err
	}
	if ps.PhysLinkState, err = f.word("PhysLinkState"); err != nil {
		return PortState{}, err
	}
	return ps, nil
}

// fieldSet is one dump's fields by name.
type fieldSet map[string]string

// fields splits a libibmad dump into its fields. Header lines ("# ...")
// and empty lines are skipped; with continued, so are lines starting
// with a tab (a capability mask's flags). Every other line must be a
// field, and no field may come twice.
func fields(out []byte, continued bool) (fieldSet, error) {
	if len(out) > maxParse {
		return nil, fmt.Errorf("%w: %d bytes, over %d", ErrBadOutput, len(out), maxParse)
	}
	f := fieldSet{}
	for i, line := range strings.Split(string(out), "\n") {
		if line == "" || strings.HasPrefix(line, "#") || (continued && line[0] == '\t') {
			continue
		}
		name, value, ok := field(line)
		if !ok {
			if why := iberror(line); why != "" {
				return nil, fmt.Errorf("smpquery said %q", why)
			}
			return nil, fmt.Errorf("%w: line %d is not a field: %q", ErrBadOutput, i+1, clip(line))
		}
		if _, dup := f[name]; dup {
			return nil, fmt.Errorf("%w: field %s twice", ErrBadOutput, name)
		}
		f[name] = value
	}
	return f, nil
}

// field splits "Name:....value": a name of letters and digits, a colon,
// the dots up to the column (at least one for every name shorter than 32)
// and a value with no dot in front.
func field(line string) (name, value string, ok bool) {
	name, rest, ok := strings.Cut(line, ":")
	if !ok || name == "" || len(name) >= dotColumn {
		return "", "", false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || i > 0 && c >= '0' && c <= '9') {
			return "", "", false
		}
	}
	dots := dotColumn - len(name)
	if len(rest) < dots || strings.Count(rest[:dots], ".") != dots {
		return "", "", false
	}
	value = rest[dots:]
	if strings.HasPrefix(value, ".") {
		return "", "", false
	}
	return name, value, true
}

func (f fieldSet) get(name string) (string, error) {
	v, ok := f[name]
	if !ok {
		return "", fmt.Errorf("%w: no %s field (cut short?)", ErrBadOutput, name)
	}
	return v, nil
}

func (f fieldSet) nodeType(name string) (string, error) {
	v, err := f.get(name)
	if err != nil {
		return "", err
	}
	switch {
	case v == ChannelAdapter, v == Switch, v == Router:
		return v, nil
	case strings.HasPrefix(v, "?(") && strings.HasSuffix(v, ")?"):
		if _, err := strconv.ParseUint(v[2:len(v)-2], 10, 8); err == nil {
			return v, nil
		}
	}
	return "", fmt.Errorf("%w: %s %q", ErrBadOutput, name, clip(v))
}

// guid reads mad_dump_hex's form of a 64-bit field: 0x and 16 digits.
func (f fieldSet) guid(name string) (uint64, error) {
	v, err := f.get(name)
	if err != nil {
		return 0, err
	}
	hex, ok := strings.CutPrefix(v, "0x")
	if !ok || len(hex) != 16 {
		return 0, fmt.Errorf("%w: %s %q is not 0x and 16 hex digits", ErrBadOutput, name, clip(v))
	}
	g, err := strconv.ParseUint(hex, 16, 64)
	if err != nil || g == 0 {
		return 0, fmt.Errorf("%w: %s %q is not a GUID", ErrBadOutput, name, clip(v))
	}
	return g, nil
}

// port reads an 8-bit port number or count (decimal): lowest to 254 (255 is
// reserved).
func (f fieldSet) port(name string, lowest int) (int, error) {
	v, err := f.get(name)
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseUint(v, 10, 8)
	if err != nil || int(n) < lowest || n > 254 {
		return 0, fmt.Errorf("%w: %s %q is not a port number from %d to 254", ErrBadOutput, name, clip(v), lowest)
	}
	return int(n), nil
}

// word reads a state's name: letters, or libibmad's "?(<n>)".
func (f fieldSet) word(name string) (string, error) {
	v, err := f.get(name)
	if err != nil {
		return "", err
	}
	if v == "" || len(v) > 32 || strings.ContainsFunc(v, func(r rune) bool {
		return !(r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '?' || r == '(' || r == ')')
	}) {
		return "", fmt.Errorf("%w: %s %q", ErrBadOutput, name, clip(v))
	}
	return v, nil
}

// iberror returns what an ibexit line says after "iberror: ", "" for any
// other line.
func iberror(line string) string {
	_, why, ok := strings.Cut(line, "iberror: ")
	if !ok {
		return ""
	}
	return clip(strings.TrimSpace(why))
}

// clip bounds text quoted in an error.
func clip(s string) string {
	const limit = 80
	if len(s) <= limit {
		return s
	}
	return strings.ToValidUTF8(s[:limit], "") + "..."
}

// text returns s trimmed of spaces when it is printable UTF-8, else with
// escapes, in at most maxText bytes: text of its own result is the same.
func text(s string) string {
	if !utf8.ValidString(s) || strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		q := strconv.Quote(s)
		s = q[1 : len(q)-1]
	}
	if len(s) > maxText {
		n := maxText
		for n > 0 && !utf8.RuneStart(s[n]) {
			n--
		}
		s = s[:n]
	}
	return strings.TrimSpace(s)
}
