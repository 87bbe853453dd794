package sim

import (
	"fmt"
	"slices"
	"strings"

	"github.com/railyard-io/railyard/internal/alloc"
)

// Binding is when a policy chooses a pod's devices, which decides what it
// knows and what it may choose from.
type Binding string

// Bindings.
const (
	// AtAllocate: the device plugin's GetPreferredAllocation, called while
	// kubelet's device manager allocates the pod's resources. Kubelet walks
	// a container's resources in Go map order, so the GPUs are chosen
	// before the NIC devices only for a share Config.GPUsKnown of pods
	// (a seeded coin toss per pod, 0.5 by default); for the others the
	// policy does not know the GPUs. Kubelet offers the NUMA-aligned free
	// devices (Topology Manager).
	AtAllocate Binding = "allocate"
	// AtSandbox: late binding (internal/binding). Kubelet allocates tokens
	// at allocate time: fungible IDs, each standing for a free device of
	// one NUMA node, preferred as the device plugin prefers them (the
	// GPUs' NUMA nodes first when the GPUs are known, then by NUMA node).
	// The device behind each token is chosen when the pod's sandbox is
	// created and its GPUs are always known: by the policy, on the token's
	// NUMA node, near the pod's GPUs of that node.
	AtSandbox Binding = "sandbox"
	// InClaim: chosen together with the GPUs, with every free device of
	// the node open and the GPUs known: a DRA claim allocated by the
	// scheduler, and the reference optimum. No kubelet step narrows it.
	InClaim Binding = "claim"
)

// Policy is one contender: an allocation policy and when it runs.
type Policy struct {
	Name    string
	Binding Binding
	Alloc   alloc.Policy
	// Pure: Alloc's answer depends on the request alone, so the simulator
	// may reuse its answer to an identical request (every policy
	// PolicyByName returns but numa, whose draws form a seeded sequence).
	Pure bool
	// lowestNUMATokens: late binding whose tokens are preferred lowest
	// NUMA node first, as the first build of the device plugin did
	// (late-bound-lowest-numa), instead of balanced over NUMA nodes.
	lowestNUMATokens bool
}

// PolicyNames returns the names PolicyByName accepts, in the order they
// are shown: the baselines, Railyard's allocate-time policies, late
// binding, the DRA model, and the optimum.
func PolicyNames() []string {
	return []string{"kubelet", "numa", "spread", "gpu-aware", "packed", "late-bound", "dra-pcieroot", "optimal"}
}

// ExtraPolicyNames returns what PolicyByName also accepts but no default
// run compares: behaviours no longer built, kept to show why they changed.
func ExtraPolicyNames() []string { return []string{"late-bound-lowest-numa"} }

// PolicyByName returns a new contender:
//
//   - kubelet, numa, spread, gpu-aware, packed: package alloc's policies at
//     allocate time (AtAllocate);
//   - late-bound: gpu-aware behind late binding (AtSandbox), kubelet's
//     tokens preferred as Railyard's device plugin prefers them: balanced
//     over the NUMA nodes of the pod's GPUs (or of the offer, when the GPUs
//     are not known yet);
//   - late-bound-lowest-numa: the same with tokens preferred lowest NUMA
//     node first, as the device plugin first did (which starves the other
//     node's GPUs: kept to show it);
//   - dra-pcieroot: the DRA scheduler's first-fit allocator with a
//     matchAttribute constraint on resource.kubernetes.io/pcieRoot between
//     each GPU and its NIC (InClaim);
//   - optimal: alloc's optimal policy with the GPUs known and every free
//     device open (InClaim): the reference.
func PolicyByName(name string) (Policy, error) {
	switch name {
	case "late-bound":
		return Policy{Name: name, Binding: AtSandbox, Alloc: alloc.NewGPUAware(), Pure: true}, nil
	case "late-bound-lowest-numa":
		return Policy{Name: name, Binding: AtSandbox, Alloc: alloc.NewGPUAware(), Pure: true, lowestNUMATokens: true}, nil
	case "dra-pcieroot":
		return Policy{Name: name, Binding: InClaim, Alloc: newPCIeRootFirstFit(), Pure: true}, nil
	case "optimal":
		return Policy{Name: name, Binding: InClaim, Alloc: alloc.NewOptimal(), Pure: true}, nil
	}
	if !slices.Contains(ExtraPolicyNames(), name) && !slices.Contains(PolicyNames(), name) {
		return Policy{}, fmt.Errorf("%w: unknown policy %q (want one of %s)", ErrConfig, name, strings.Join(PolicyNames(), ", "))
	}
	p, err := alloc.ByName(name)
	if err != nil {
		return Policy{}, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	return Policy{Name: name, Binding: AtAllocate, Alloc: p, Pure: name != "numa"}, nil
}
