package schedtopo

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// HyperNodeSpec is a Volcano HyperNode's spec: its tier (1 the lowest)
// and its members.
type HyperNodeSpec struct {
	Tier    int      `json:"tier"`
	Members []Member `json:"members"`
}

// Member is a HyperNode's member: nodes (type Node), selected by label, or
// a lower HyperNode (type HyperNode), selected by name.
type Member struct {
	Type     string         `json:"type"`
	Selector MemberSelector `json:"selector"`
}

// MemberSelector selects a member by name (exactMatch) or, for nodes, by
// labels (labelMatch, Volcano 1.12 and later).
type MemberSelector struct {
	ExactMatch *ExactMatch `json:"exactMatch,omitempty"`
	LabelMatch *LabelMatch `json:"labelMatch,omitempty"`
}

// ExactMatch selects by name.
type ExactMatch struct {
	Name string `json:"name"`
}

// LabelMatch selects nodes by labels.
type LabelMatch struct {
	MatchLabels map[string]string `json:"matchLabels"`
}

// HyperNodes are Volcano's HyperNodes for the domains: a tier-1 HyperNode
// per leaf set, whose members are the nodes with its leaf-set label
// value, and a tier-2 HyperNode per unit, whose members are the tier-1
// HyperNodes of its leaf sets. Names are prefix, "ls-" or "unit-", and
// the label value (made a DNS name: other characters become '-', with a
// short digest of the value when it had to change; a leaf set's own "ls-"
// is not repeated). A leaf set of nodes without the unit label has no
// parent. It fails (ErrTopology) when the labels do not nest (a HyperNode
// has one parent) or two values make one name.
func HyperNodes(d Domains, prefix string) ([]Object, error) {
	if c := d.Conflicts(); len(c) > 0 {
		return nil, fmt.Errorf("%w: %s", ErrTopology, strings.Join(c, "; "))
	}
	var leaves, units []Object
	children := map[string][]string{} // unit -> leaf-set HyperNode names
	named := map[string]string{}      // HyperNode name -> the value it is for
	unique := func(name, value string) error {
		if prev, dup := named[name]; dup {
			return fmt.Errorf("%w: %q and %q both make HyperNode %s", ErrTopology, prev, value, name)
		}
		named[name] = value
		return nil
	}
	for _, v := range slices.Sorted(maps.Keys(d.LeafSets)) {
		name, err := dnsName(prefix+"ls-", strings.TrimPrefix(v, "ls-"))
		if err == nil {
			err = unique(name, v)
		}
		if err != nil {
			return nil, err
		}
		leaves = append(leaves, Object{APIVersion: VolcanoTopologyAPIVersion, Kind: "HyperNode", Metadata: meta(name), Spec: HyperNodeSpec{
			Tier: 1,
			Members: []Member{{Type: "Node", Selector: MemberSelector{LabelMatch: &LabelMatch{
				MatchLabels: map[string]string{d.Keys.LeafSet: v}}}}},
		}})
		if u := d.LeafSets[v].Units[0]; u != "" {
			children[u] = append(children[u], name)
		}
	}
	for _, u := range slices.Sorted(maps.Keys(children)) {
		name, err := dnsName(prefix+"unit-", u)
		if err == nil {
			err = unique(name, u)
		}
		if err != nil {
			return nil, err
		}
		spec := HyperNodeSpec{Tier: 2}
		for _, c := range children[u] {
			spec.Members = append(spec.Members, Member{Type: "HyperNode", Selector: MemberSelector{ExactMatch: &ExactMatch{Name: c}}})
		}
		units = append(units, Object{APIVersion: VolcanoTopologyAPIVersion, Kind: "HyperNode", Metadata: meta(name), Spec: spec})
	}
	return append(units, leaves...), nil
}

// dnsName is prefix+value as a DNS subdomain (an object name): lower
// case, characters a name cannot hold as '-', and a digest of the value
// when it had to change or was too long.
func dnsName(prefix, value string) (string, error) {
	name := prefix + value
	if len(validation.IsDNS1123Subdomain(name)) == 0 {
		return name, nil
	}
	b := []byte(strings.ToLower(value))
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '.') {
			b[i] = '-'
		}
	}
	sum := sha256.Sum256([]byte(value))
	suffix := "-" + hex.EncodeToString(sum[:3])
	v := strings.Trim(string(b), "-.")
	if room := validation.DNS1123SubdomainMaxLength - len(prefix) - len(suffix); len(v) > room {
		v = strings.TrimRight(v[:max(room, 0)], "-.")
	}
	name = prefix + v + suffix
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		return "", fmt.Errorf("%w: the HyperNode name for %q: %s", ErrTopology, value, strings.Join(errs, "; "))
	}
	return name, nil
}
