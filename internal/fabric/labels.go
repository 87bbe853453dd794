package fabric

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/railyard-io/railyard/internal/strictjson"
)

// Node labels and the annotation the publisher writes on its own node.
const (
	// RailLabelPrefix + rail index: the leaf switch the node's NIC of that
	// rail is cabled to ("rail.railyard.io/3=leaf-r3-su1"), while it is
	// heard or held (Port.StaleRounds).
	RailLabelPrefix = "rail.railyard.io/"
	// LeafSetLabel: nodes with the same value are cabled to the same leaf on
	// every rail (a scalable unit): a job inside it keeps each rail's traffic
	// under one leaf. The value is a digest of the rail=leaf pairs the node
	// is known to have (a dead rail counts with its last leaf), so a dead
	// rail does not move the node out of its domain.
	LeafSetLabel = "railyard.io/leaf-set"
	// UnitLabel: the node's unit (a scalable unit, a rack: nodes cabled to
	// the same leaves, learned across the cluster by Analyze's grouping),
	// named after the unit's first leaf. One writer for the cluster sets
	// it (UnitLabels; `railyard fabric label-units`), not the node's
	// publisher. Leaf sets nest in units.
	UnitLabel = "railyard.io/fabric-unit"
	// DegradedRailsLabel: the node's rails that reached a leaf and no
	// longer do (past the hold, withdrawn, or the NIC gone), as rail
	// indexes joined by "_" ("3", "3_5"); absent when none is.
	DegradedRailsLabel = "railyard.io/degraded-rails"
	// PortsAnnotation holds the node's ports as JSON ([]Port), which
	// `railyard fabric` reads back.
	PortsAnnotation = "railyard.io/fabric-ports"
)

// Topograph's keys (NVIDIA Topograph v1: fabric.topograph.run/tier-N,
// tier 0 the switch tier nearest the node, numbers growing outwards;
// Topograph merges leaves with the same nodes into one tier-0 value). In
// the topograph scheme the leaf set is tier 0 and the unit tier 1.
const (
	TopographTier0 = "fabric.topograph.run/tier-0"
	TopographTier1 = "fabric.topograph.run/tier-1"
)

// Label schemes: which keys the two levels are written under.
const (
	SchemeRailyard  = "railyard"
	SchemeTopograph = "topograph"
)

// LabelKeys names the keys of the two levels schedulers nest: the leaf
// set (the node's publisher writes it) and the unit (the cluster's unit
// writer does). An empty field is Railyard's key. The rail labels and
// DegradedRailsLabel have Railyard's keys in every scheme.
type LabelKeys struct {
	LeafSet string `json:"leafSet,omitempty"`
	Unit    string `json:"unit,omitempty"`
}

// SchemeKeys returns a scheme's keys: railyard (railyard.io/leaf-set,
// railyard.io/fabric-unit) or topograph (tier-0, tier-1).
func SchemeKeys(scheme string) (LabelKeys, error) {
	switch scheme {
	case SchemeRailyard, "":
		return LabelKeys{LeafSet: LeafSetLabel, Unit: UnitLabel}, nil
	case SchemeTopograph:
		return LabelKeys{LeafSet: TopographTier0, Unit: TopographTier1}, nil
	}
	return LabelKeys{}, fmt.Errorf("label scheme %q: want %s or %s", scheme, SchemeRailyard, SchemeTopograph)
}

// WithDefaults fills an empty key with Railyard's.
func (k LabelKeys) WithDefaults() LabelKeys {
	if k.LeafSet == "" {
		k.LeafSet = LeafSetLabel
	}
	if k.Unit == "" {
		k.Unit = UnitLabel
	}
	return k
}

// Validate returns every reason the keys (defaults filled) cannot be
// written: each must be a label key with a domain prefix, outside the
// kubernetes.io and k8s.io domains Kubernetes reserves, distinct, and
// none of Railyard's other fabric keys.
func (k LabelKeys) Validate() error {
	k = k.WithDefaults()
	var errs []error
	for _, f := range []struct{ field, key string }{{"leafSet", k.LeafSet}, {"unit", k.Unit}} {
		prefix, _, hasPrefix := strings.Cut(f.key, "/")
		switch {
		case len(validation.IsQualifiedName(f.key)) > 0:
			errs = append(errs, fmt.Errorf("%s: %q is not a label key: %s", f.field, f.key, strings.Join(validation.IsQualifiedName(f.key), "; ")))
		case !hasPrefix:
			errs = append(errs, fmt.Errorf("%s: %q has no domain prefix (example.com/name)", f.field, f.key))
		case reserved(prefix):
			errs = append(errs, fmt.Errorf("%s: %q is in a domain Kubernetes reserves (kubernetes.io, k8s.io)", f.field, f.key))
		case strings.HasPrefix(f.key, RailLabelPrefix) || f.key == DegradedRailsLabel:
			errs = append(errs, fmt.Errorf("%s: %q is another fabric label's key", f.field, f.key))
		}
	}
	if k.LeafSet == k.Unit {
		errs = append(errs, fmt.Errorf("leafSet and unit: both %q; want two keys", k.Unit))
	}
	return errors.Join(errs...)
}

func reserved(prefix string) bool {
	for _, d := range []string{"kubernetes.io", "k8s.io"} {
		if prefix == d || strings.HasSuffix(prefix, "."+d) {
			return true
		}
	}
	return false
}

// PublisherOwns says whether a node's publisher owns the label key: a
// rail label, the leaf set's key or DegradedRailsLabel. It writes and
// removes those keys and no other.
func (k LabelKeys) PublisherOwns(key string) bool {
	return strings.HasPrefix(key, RailLabelPrefix) || key == k.WithDefaults().LeafSet || key == DegradedRailsLabel
}

// MaxAnnotation bounds the ports annotation `railyard fabric` accepts.
const MaxAnnotation = 64 << 10

// Labels returns the node labels derived from one node's own ports under
// Railyard's keys (LabelKeys.Labels).
func Labels(ports []Port) map[string]string { return LabelKeys{}.Labels(ports) }

// Labels returns the node labels derived from one node's own ports:
//   - a rail label per rail whose NIC has a neighbor (heard, or held:
//     Port.StaleRounds);
//   - the leaf set, from every rail the node is known to reach: its
//     neighbor, else its last (Port.LastSwitch), so a dead rail keeps the
//     node in its leaf set;
//   - DegradedRailsLabel, the rails with a last switch and no neighbor.
//
// Of two ports of one rail the first (in the node's order) names it.
// Ports without a rail, or that never had a neighbor, add nothing.
func (k LabelKeys) Labels(ports []Port) map[string]string {
	k = k.WithDefaults()
	out := map[string]string{}
	known := map[int]bool{}
	live := map[int]bool{}
	var pairs []string
	var rails []int
	for _, p := range ports {
		sw := p.Switch
		if sw == "" {
			sw = p.LastSwitch
		}
		if p.Rail < 0 || sw == "" {
			continue
		}
		if !known[p.Rail] {
			known[p.Rail] = true
			rails = append(rails, p.Rail)
			pairs = append(pairs, fmt.Sprintf("%d=%s", p.Rail, sw))
		}
		if p.Switch != "" && !live[p.Rail] {
			live[p.Rail] = true
			out[RailLabelPrefix+strconv.Itoa(p.Rail)] = LabelValue(p.Switch)
		}
	}
	if len(pairs) > 0 {
		sort.Strings(pairs)
		sum := sha256.Sum256([]byte(strings.Join(pairs, "\n")))
		out[k.LeafSet] = "ls-" + hex.EncodeToString(sum[:6])
	}
	var degraded []int
	for _, r := range rails {
		if !live[r] {
			degraded = append(degraded, r)
		}
	}
	if len(degraded) > 0 {
		out[DegradedRailsLabel] = railList(degraded)
	}
	return out
}

// railList joins rail indexes, ascending, with "_" ("3_5"); a list longer
// than a label value holds ends with "_more" after the rails that fit.
func railList(rails []int) string {
	sort.Ints(rails)
	const more = "_more"
	v := ""
	for i, r := range rails {
		next := strconv.Itoa(r)
		if i > 0 {
			next = "_" + next
		}
		room := validation.LabelValueMaxLength
		if i < len(rails)-1 {
			room -= len(more)
		}
		if len(v)+len(next) > room {
			return v + more
		}
		v += next
	}
	return v
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

// DecodePorts reads a ports annotation strictly (strictjson): at most
// MaxAnnotation bytes, one list and nothing after it, known keys only,
// each once. Unknown keys stay errors on purpose: an annotation from a
// newer publisher says things this reader cannot weigh, so its readers
// skip that node with a note (the CLI's "not decoded", the unit writer's
// undecodable nodes, the agent's warning) rather than act on half of it.
func DecodePorts(s string) ([]Port, error) {
	var ports []Port
	if err := strictjson.UnmarshalLimit([]byte(s), MaxAnnotation, &ports); err != nil {
		return nil, fmt.Errorf("annotation %s: %w", PortsAnnotation, err)
	}
	for i := range ports {
		if len(ports[i].Switches) == 0 {
			ports[i].Switches = nil // "switches": [] says what its absence says
		}
		if len(ports[i].SwitchPorts) == 0 {
			ports[i].SwitchPorts = nil
		}
	}
	return ports, nil
}
