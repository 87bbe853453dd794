package fabric

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Node labels and the annotation the agent writes on its own node.
const (
	// RailLabelPrefix + rail index: the leaf switch the node's NIC of that
	// rail is cabled to ("rail.railyard.io/3=leaf-r3-su1").
	RailLabelPrefix = "rail.railyard.io/"
	// LeafSetLabel: nodes with the same value are cabled to the same leaf on
	// every rail (a scalable unit): a job inside it keeps each rail's traffic
	// under one leaf. The value is a digest of the rail=leaf pairs.
	LeafSetLabel = "railyard.io/leaf-set"
	// PortsAnnotation holds the node's ports as JSON ([]Port), which
	// `railyard fabric` reads back.
	PortsAnnotation = "railyard.io/fabric-ports"
)

// MaxAnnotation bounds the ports annotation `railyard fabric` accepts.
const MaxAnnotation = 64 << 10

// Labels returns the node labels derived from one node's own ports: a rail
// label per rail whose NIC has a neighbor, and the leaf set when at least
// one has. Ports without a rail or a neighbor add nothing.
func Labels(ports []Port) map[string]string {
	out := map[string]string{}
	var pairs []string
	for _, p := range ports {
		if p.Rail < 0 || p.Switch == "" {
			continue
		}
		key := RailLabelPrefix + strconv.Itoa(p.Rail)
		if _, dup := out[key]; dup {
			continue // a rail with two ports: the first (in the node's order) names it
		}
		out[key] = LabelValue(p.Switch)
		pairs = append(pairs, fmt.Sprintf("%d=%s", p.Rail, p.Switch))
	}
	if len(pairs) > 0 {
		sort.Strings(pairs)
		sum := sha256.Sum256([]byte(strings.Join(pairs, "\n")))
		out[LeafSetLabel] = "ls-" + hex.EncodeToString(sum[:6])
	}
	return out
}

// Leaves maps each NIC of a node's ports (Port.NIC: its RDMA device name,
// else its PCI address) to the leaf switch its port is cabled to, spelled
// as its rail label is (LabelValue): what the agent publishes as each
// NIC's DRA attribute railyard.io/leaf (dra.Options.Leaves). Ports
// without a neighbor add nothing; of two ports of one NIC the first names
// it.
func Leaves(ports []Port) map[string]string {
	out := map[string]string{}
	for _, p := range ports {
		if p.NIC == "" || p.Switch == "" {
			continue
		}
		if _, dup := out[p.NIC]; !dup {
			out[p.NIC] = LabelValue(p.Switch)
		}
	}
	return out
}

// LabelValue turns a switch name into a valid label value: characters a
// label value cannot hold become '-', and a name that had to change (or
// was longer than 63 bytes) gets a short digest of the original so two
// switches never share a value.
func LabelValue(s string) string {
	if len(validation.IsValidLabelValue(s)) == 0 {
		return s
	}
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			b[i] = '-'
		}
	}
	sum := sha256.Sum256([]byte(s))
	suffix := "-" + hex.EncodeToString(sum[:3])
	v := string(b)
	if len(v) > validation.LabelValueMaxLength-len(suffix) {
		v = v[:validation.LabelValueMaxLength-len(suffix)]
	}
	v = strings.Trim(v, "-_.")
	if v == "" {
		return strings.TrimPrefix(suffix, "-")
	}
	return v + suffix
}

// EncodePorts is the ports annotation's value.
func EncodePorts(ports []Port) (string, error) {
	b, err := json.Marshal(ports)
	if err != nil {
		return "", fmt.Errorf("encoding fabric ports: %w", err)
	}
	return string(b), nil
}

// DecodePorts reads a ports annotation strictly: at most MaxAnnotation
// bytes, known fields only.
func DecodePorts(s string) ([]Port, error) {
	if len(s) > MaxAnnotation {
		return nil, fmt.Errorf("annotation %s: %d bytes, more than %d", PortsAnnotation, len(s), MaxAnnotation)
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(s)))
	dec.DisallowUnknownFields()
	var ports []Port
	if err := dec.Decode(&ports); err != nil {
		return nil, fmt.Errorf("annotation %s: %w", PortsAnnotation, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("annotation %s: data after the port list", PortsAnnotation)
	}
	for i := range ports {
		if len(ports[i].Switches) == 0 {
			ports[i].Switches = nil // "switches": [] says what its absence says
		}
	}
	return ports, nil
}
