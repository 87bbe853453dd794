package sim

import (
	"fmt"
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

// JobPlacement is how a contender places the pods of a job of several
// pods.
type JobPlacement string

// Job placements.
const (
	// PerPodPlacement: every pod on its own, as today's scheduler and
	// claims place them (a per-pod pcieRoot claim has no constraint
	// across pods); the job is placed when all its pods are.
	PerPodPlacement JobPlacement = ""
	// OneRailSet: one rail set for the whole job (the in-node rail
	// indexes of its NICs), every pod on a different node with the GPUs
	// of those rails and each GPU on its nearest NIC among them; the pods
	// in one scalable unit when one has room. A job that fits by GPU
	// count but not on one rail set waits (Config.MaxWait).
	OneRailSet JobPlacement = "rail-set"
	// AdmissionRailSet: one rail set for the whole job as the rail
	// controller (internal/railctl) chooses it: at the job's arrival (its
	// first pod's admission) by jobrails.Choose's rule on the cluster as
	// it is then, fixed while the job waits; each pod starts as soon as it
	// has room on that set (the scheduler places pods one by one), the
	// started ones holding their GPUs until the last starts; re-chosen
	// after Config.RechooseAfter when no pod has started and another set
	// has room for all of them. Waits are bounded by Config.MaxWait.
	AdmissionRailSet JobPlacement = "rail-set-at-admission"
)

// OneSet reports whether the placement puts every pod of a job on one
// rail set.
func (j JobPlacement) OneSet() bool { return j == OneRailSet || j == AdmissionRailSet }

// Policy is one contender: an allocation policy and when it runs.
type Policy struct {
	Name    string
	Binding Binding
	// Job is how the pods of a multi-pod job are placed.
	Job   JobPlacement
	Alloc alloc.Policy
	// Pure: Alloc's answer depends on the request alone, so the simulator
	// may reuse its answer to an identical request (every policy
	// PolicyByName returns but numa, whose draws form a seeded sequence).
	Pure bool
	// firstFitRails: one rail set per job, tried in the scheduler's
	// order (job-rails-first-fit) instead of those with room on the most
	// nodes first.
	firstFitRails bool
	// lowestNUMATokens: late binding whose tokens are preferred lowest
	// NUMA node first, as the first build of the device plugin did
	// (late-bound-lowest-numa), instead of balanced over NUMA nodes.
	lowestNUMATokens bool
}

// contenders are the simulator's own contenders; every other name is one
// of package alloc's policies (alloc.Names): its baselines and Railyard's
// at allocate time, its reference in a claim.
var contenders = []struct {
	name string
	// extra: accepted, but no default run compares it.
	extra  bool
	policy func(name string) Policy
}{
	{"late-bound", false, func(n string) Policy {
		return Policy{Name: n, Binding: AtSandbox, Alloc: alloc.NewGPUAware(), Pure: true}
	}},
	{"late-bound-lowest-numa", true, func(n string) Policy {
		return Policy{Name: n, Binding: AtSandbox, Alloc: alloc.NewGPUAware(), Pure: true, lowestNUMATokens: true}
	}},
	{"dra-pcieroot", false, func(n string) Policy {
		return Policy{Name: n, Binding: InClaim, Alloc: newPCIeRootFirstFit(), Pure: true}
	}},
	{"job-rails", false, func(n string) Policy {
		return Policy{Name: n, Binding: InClaim, Job: OneRailSet, Alloc: alloc.NewGPUAware(), Pure: true}
	}},
	{"job-rails-admission", false, func(n string) Policy {
		return Policy{Name: n, Binding: InClaim, Job: AdmissionRailSet, Alloc: alloc.NewGPUAware(), Pure: true}
	}},
	{"job-rails-first-fit", true, func(n string) Policy {
		return Policy{Name: n, Binding: InClaim, Job: OneRailSet, Alloc: alloc.NewGPUAware(), Pure: true, firstFitRails: true}
	}},
}

func contenderNames(extra bool) []string {
	var out []string
	for _, c := range contenders {
		if c.extra == extra {
			out = append(out, c.name)
		}
	}
	return out
}

// PolicyNames returns the names PolicyByName accepts, in the order they
// are shown: alloc's baselines and Railyard's allocate-time policies, late
// binding, the DRA model, and alloc's optimum.
func PolicyNames() []string {
	out := alloc.Names(alloc.Baseline, alloc.Node)
	out = append(out, contenderNames(false)...)
	return append(out, alloc.Names(alloc.Reference)...)
}

// ExtraPolicyNames returns what PolicyByName also accepts but no default
// run compares: behaviours no longer built, kept to show why they changed.
func ExtraPolicyNames() []string { return contenderNames(true) }

// PolicyByName returns a new contender:
//
//   - kubelet, numa, spread, gpu-aware, packed: package alloc's baselines
//     and Railyard's policies at allocate time (AtAllocate);
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
//   - job-rails: one rail set per job (OneRailSet): a claim giving every
//     pod of a job the GPUs of the same rails, each GPU a device on its
//     nearest NIC among those rails (gpu-aware over the rails' devices),
//     the rail set with room on the most nodes first;
//   - job-rails-admission: one rail set per job as the rail controller
//     chooses it (AdmissionRailSet): at the first pod's admission, by
//     jobrails.Choose's rule, each pod starting when it has room on it,
//     re-chosen after Config.RechooseAfter before any pod started;
//   - job-rails-first-fit: job-rails trying rail sets in the scheduler's
//     order (the alternative docs/alloc.md weighs: it strands more);
//   - optimal: alloc's reference, the optimal policy, with the GPUs known
//     and every free device open (InClaim).
func PolicyByName(name string) (Policy, error) {
	for _, c := range contenders {
		if c.name == name {
			return c.policy(name), nil
		}
	}
	role, ok := alloc.RoleOf(name)
	if !ok {
		return Policy{}, fmt.Errorf("%w: unknown policy %q (want one of %s)", ErrConfig, name, strings.Join(PolicyNames(), ", "))
	}
	p, err := alloc.ByName(name)
	if err != nil {
		return Policy{}, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	if role == alloc.Reference {
		return Policy{Name: name, Binding: InClaim, Alloc: p, Pure: true}, nil
	}
	// numa's draws form a seeded sequence: its answer is not the request's alone.
	return Policy{Name: name, Binding: AtAllocate, Alloc: p, Pure: name != "numa"}, nil
}
