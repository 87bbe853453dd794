package alloc

import (
	"fmt"
	"slices"
	"strings"
)

// Role says where a policy serves.
type Role int

const (
	// Baseline policies model how clusters allocate today (kubelet's own
	// order, NUMA alignment): simulations and benchmarks only.
	Baseline Role = iota
	// Node policies are Railyard's: a pool's policy on a node (the agent's
	// configuration and the chart's values accept exactly these).
	Node
	// Reference is the optimum, the yardstick of simulations.
	Reference
)

// registry is the one list of policies: name, role and constructor, in
// the order they are shown (the baselines, Railyard's, the optimum). The
// simulator's contenders, the agent's configuration and the chart's
// schema are tied to it (names_test.go).
var registry = []struct {
	name string
	role Role
	make func() Policy
}{
	{"kubelet", Baseline, func() Policy { return NewKubelet() }},
	{"numa", Baseline, func() Policy { return NewNUMA(0) }},
	{"spread", Node, func() Policy { return NewSpread() }},
	{"gpu-aware", Node, func() Policy { return NewGPUAware() }},
	{"packed", Node, func() Policy { return NewPacked() }},
	{"optimal", Reference, func() Policy { return NewOptimal() }},
}

// Names returns the names ByName accepts, in the order they are shown;
// with roles, only the names of those roles.
func Names(roles ...Role) []string {
	var out []string
	for _, r := range registry {
		if len(roles) == 0 || slices.Contains(roles, r.role) {
			out = append(out, r.name)
		}
	}
	return out
}

// RoleOf returns a policy's role.
func RoleOf(name string) (Role, bool) {
	for _, r := range registry {
		if r.name == name {
			return r.role, true
		}
	}
	return 0, false
}

// ByName returns a new policy of that name ("numa" with seed 0).
func ByName(name string) (Policy, error) {
	for _, r := range registry {
		if r.name == name {
			return r.make(), nil
		}
	}
	return nil, fmt.Errorf("alloc: unknown policy %q (want one of %s)", name, strings.Join(Names(), ", "))
}
