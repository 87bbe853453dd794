package sim

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"github.com/railyard-io/railyard/internal/topology"
)

// ErrConfig is returned (wrapped) for an unusable configuration.
var ErrConfig = errors.New("sim: invalid configuration")

// DeviceMode says how many NIC devices a pod asks for.
type DeviceMode string

// Device modes.
const (
	// PerGPU: one device per GPU of the pod.
	PerGPU DeviceMode = "gpu"
	// PerPod: one device per pod, whatever its GPUs.
	PerPod DeviceMode = "pod"
	// AllPFs (allpfs.go): one device on every rail PF per pod.
)

// TopologyPolicy is the kubelet Topology Manager policy modelled.
type TopologyPolicy string

// Topology Manager policies.
const (
	// TMNone: no NUMA alignment; the GPU plugin alone chooses GPUs.
	TMNone TopologyPolicy = "none"
	// TMBestEffort: prefer the narrowest NUMA set, admit anyway.
	TMBestEffort TopologyPolicy = "best-effort"
	// TMRestricted: reject pods whose NUMA set is wider than it would be on
	// an empty node.
	TMRestricted TopologyPolicy = "restricted"
	// TMSingleNUMA: reject pods that cannot be aligned on one NUMA node.
	TMSingleNUMA TopologyPolicy = "single-numa-node"
)

// Scheduler is how the scheduler scores feasible nodes.
type Scheduler string

// Schedulers.
const (
	// MostAllocated packs pods onto the fullest node that fits (GPU bin
	// packing, the usual choice for GPU clusters).
	MostAllocated Scheduler = "most-allocated"
	// LeastAllocated spreads pods onto the emptiest node (kube-scheduler's
	// default scoring).
	LeastAllocated Scheduler = "least-allocated"
)

// Bandwidth is the modelled per-GPU RDMA bandwidth (GB/s) by the distance
// class of the GPU's nearest allocated NIC.
type Bandwidth map[topology.Class]float64

// DefaultBandwidth is the published 8-GPU/4-NIC measurement: 10.5 GB/s when
// the NIC is under the GPU's PCIe switch, 3.5 GB/s across the host bridge.
// PXB counts as 10.5: NCCL enables GPUDirect RDMA up to PXB by default.
func DefaultBandwidth() Bandwidth {
	return Bandwidth{topology.PIX: 10.5, topology.PXB: 10.5, topology.PHB: 3.5, topology.NODE: 3.5, topology.SYS: 3.5, topology.ClassUnknown: 3.5}
}

// ParseBandwidth reads "PIX=10.5,PXB=10.5,PHB=3.5,NODE=3.5,SYS=3.5"; classes
// left out keep their default.
func ParseBandwidth(s string) (Bandwidth, error) {
	bw := DefaultBandwidth()
	if strings.TrimSpace(s) == "" {
		return bw, nil
	}
	for _, part := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return nil, fmt.Errorf("%w: bandwidth entry %q: want CLASS=GBPS", ErrConfig, part)
		}
		c, err := topology.ParseClass(k)
		if err != nil {
			return nil, fmt.Errorf("%w: bandwidth entry %q: %w", ErrConfig, part, err)
		}
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil || f < 0 || math.IsInf(f, 0) || math.IsNaN(f) {
			return nil, fmt.Errorf("%w: bandwidth entry %q: GB/s must be a non-negative number", ErrConfig, part)
		}
		bw[c] = f
	}
	return bw, nil
}

// String prints the model in ParseBandwidth's syntax.
func (b Bandwidth) String() string {
	var parts []string
	for _, c := range topology.Classes {
		parts = append(parts, fmt.Sprintf("%s=%g", c, b[c]))
	}
	return strings.Join(parts, ",")
}

// DefaultGPUsKnown is the share of pods whose GPUs kubelet allocates before
// their NIC devices: two resources in Go map order, a coin toss.
const DefaultGPUsKnown = 0.5

// DefaultRechooseAfter is Config.RechooseAfter's default, in mean pod
// lifetimes: the chart's --rechoose-after of 2 minutes for jobs that run
// 40 minutes on average.
const DefaultRechooseAfter = 0.05

// Bounds of a simulation. Memory grows with pods (about 100 bytes per
// pod and policy simulated at once) and with nodes x devices (a few bytes
// each per policy); these keep a run within a few GB while allowing twice
// the frontier goal of 1,000,000 pod arrivals on 12,500 nodes.
const (
	MaxPods           = 2_000_000
	MaxNodes          = 100_000
	MaxClusterDevices = 50_000_000
)

// topologyDevices counts a node's allocatable NIC devices as the
// simulator does: each PF's VFs, or the PF itself without VFs.
func topologyDevices(t *topology.Topology) int {
	n := 0
	for _, nic := range t.NICs {
		n += max(1, len(nic.VFs))
	}
	return n
}

// Config is one simulation.
type Config struct {
	// Topology is the machine model every node shares; Machine names it.
	Topology *topology.Topology
	Machine  string
	// Nodes in the cluster and pod arrivals to simulate (each placed pod
	// also leaves, so events are up to twice Pods). Jobs are drawn until
	// Pods pods arrived: the last job of several pods may bring a few more.
	Nodes, Pods int
	Seed        uint64
	// Mix is the job shapes (single pods and jobs of several pods).
	Mix     []MixEntry
	Devices DeviceMode
	// Load is the offered GPU load: mean busy GPUs over cluster GPUs if no
	// pod were rejected (default 0.9).
	Load           float64
	TopologyPolicy TopologyPolicy
	Scheduler      Scheduler
	// GPUsKnown is the probability that kubelet allocates a pod's GPUs
	// before its NIC devices, so that a policy running at allocate time
	// knows them: kubelet's device manager walks a container's resources
	// in Go map order, a coin toss per pod (default 0.5; 1 is the old,
	// lucky assumption). Late binding and claims always know the GPUs.
	GPUsKnown *float64
	Bandwidth Bandwidth
	// Policies to compare (default: every one PolicyNames lists).
	Policies []Policy
	// Workers run policies in parallel (default GOMAXPROCS).
	Workers int
	// SUNodes is the nodes per scalable unit of the rail-optimized
	// fabric: NIC i of every node is cabled to leaf i of its unit, nodes
	// numbered in order (node n is in unit n/SUNodes, fabric.Layout), and
	// traffic between units crosses the spine. 0: the whole cluster is
	// one unit.
	SUNodes int
	// MaxWait is how long (in mean pod lifetimes, the simulator's unit of
	// time) a job that a placement constrained to one rail set cannot
	// place on arrival waits before it is rejected (default 1).
	MaxWait float64
	// RechooseAfter is how long (in mean pod lifetimes) the pods of a job
	// of AdmissionRailSet wait on its rail set, none started, before the
	// rail controller tries another set (its --rechoose-after; default
	// DefaultRechooseAfter).
	RechooseAfter float64
	// AskEveryPod turns off the memo of pure policies' answers: every
	// pod's request goes to the policy (same results, several times
	// slower; for measuring and testing the memo).
	AskEveryPod bool
	// timeEvery overrides the sampling of decision times (tests).
	timeEvery int
	// trace, when set, sees every placed job of several pods (tests; it
	// is called from the policies' workers at once).
	trace func(jobTrace)
}

// withDefaults fills zero fields and validates.
func (c Config) withDefaults() (Config, error) {
	var errs []error
	if c.Topology == nil {
		errs = append(errs, errors.New("no topology"))
	} else {
		if len(c.Topology.GPUs) == 0 || len(c.Topology.GPUs) > 64 {
			errs = append(errs, fmt.Errorf("machine has %d GPUs, want 1 to 64", len(c.Topology.GPUs)))
		}
		if len(c.Topology.NICs) == 0 {
			errs = append(errs, errors.New("machine has no RDMA NICs"))
		}
	}
	if c.Nodes <= 0 || c.Nodes > MaxNodes {
		errs = append(errs, fmt.Errorf("nodes: %d, want 1 to %d", c.Nodes, MaxNodes))
	} else if c.Topology != nil {
		if devs := c.Nodes * topologyDevices(c.Topology); devs > MaxClusterDevices {
			errs = append(errs, fmt.Errorf("nodes: %d nodes x %d devices is %d devices, want at most %d", c.Nodes, devs/c.Nodes, devs, MaxClusterDevices))
		}
	}
	if c.Pods < 0 || c.Pods > MaxPods {
		errs = append(errs, fmt.Errorf("pods: %d, want 0 to %d", c.Pods, MaxPods))
	}
	if c.Mix == nil {
		c.Mix = namedMixes()["uniform"]
	}
	total := 0.0
	for _, m := range c.Mix {
		if m.GPUs < 1 || m.Weight < 0 || m.Pods < 0 || m.Pods > MaxJobPods {
			errs = append(errs, fmt.Errorf("mix entry %+v: want GPUs >= 1, weight >= 0 and pods 0 to %d", m, MaxJobPods))
		}
		total += m.Weight
	}
	if total <= 0 || math.IsInf(total, 0) || math.IsNaN(total) {
		errs = append(errs, errors.New("mix: total weight must be positive and finite"))
	}
	if err := oneOf("devices", &c.Devices, PerGPU, PerPod, AllPFs); err != nil {
		errs = append(errs, err)
	}
	if c.Devices == AllPFs {
		// Every pod gets one device on every PF: no policy chooses, so the
		// run has one contender, all-pfs.
		if len(c.Policies) > 0 {
			errs = append(errs, errors.New("devices all-pfs: every pod takes one device on every PF, no policy chooses: give no policies"))
		} else if p, err := allPFsPolicy(); err != nil {
			errs = append(errs, err)
		} else {
			c.Policies = []Policy{p}
		}
		if multiPod(c.Mix) {
			errs = append(errs, errors.New("devices all-pfs: models single pods only (jobs of several pods place on rail sets)"))
		}
	}
	if c.Load == 0 {
		c.Load = 0.9
	}
	if c.Load < 0 || math.IsNaN(c.Load) || math.IsInf(c.Load, 0) {
		errs = append(errs, fmt.Errorf("load: %g, want > 0", c.Load))
	}
	if err := oneOf("topology policy", &c.TopologyPolicy, TMBestEffort, TMNone, TMRestricted, TMSingleNUMA); err != nil {
		errs = append(errs, err)
	}
	if err := oneOf("scheduler", &c.Scheduler, MostAllocated, LeastAllocated); err != nil {
		errs = append(errs, err)
	}
	if c.GPUsKnown == nil {
		half := DefaultGPUsKnown
		c.GPUsKnown = &half
	} else if p := *c.GPUsKnown; p < 0 || p > 1 || math.IsNaN(p) {
		errs = append(errs, fmt.Errorf("gpus-known: %g, want 0 to 1", p))
	}
	if c.SUNodes < 0 || c.SUNodes > MaxNodes {
		errs = append(errs, fmt.Errorf("su-nodes: %d, want 0 (one unit) to %d", c.SUNodes, MaxNodes))
	}
	if c.MaxWait == 0 {
		c.MaxWait = 1
	}
	if !(c.MaxWait > 0) || math.IsInf(c.MaxWait, 0) {
		errs = append(errs, fmt.Errorf("max-wait: %g, want a finite time > 0", c.MaxWait))
	}
	if c.RechooseAfter == 0 {
		c.RechooseAfter = DefaultRechooseAfter
	}
	if !(c.RechooseAfter > 0) || math.IsInf(c.RechooseAfter, 0) {
		errs = append(errs, fmt.Errorf("rechoose-after: %g, want a finite time > 0", c.RechooseAfter))
	}
	if c.Bandwidth == nil {
		c.Bandwidth = DefaultBandwidth()
	}
	if len(c.Policies) == 0 {
		for _, n := range PolicyNames() {
			p, err := PolicyByName(n)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			c.Policies = append(c.Policies, p)
		}
	}
	for i, p := range c.Policies {
		switch {
		case p.Alloc == nil:
			errs = append(errs, fmt.Errorf("policy %d (%q): no allocation policy", i, p.Name))
		case p.Binding != AtAllocate && p.Binding != AtSandbox && p.Binding != InClaim:
			errs = append(errs, fmt.Errorf("policy %q: binding %q, want %s, %s or %s", p.Name, p.Binding, AtAllocate, AtSandbox, InClaim))
		case p.Job != PerPodPlacement && p.Binding != InClaim:
			errs = append(errs, fmt.Errorf("policy %q: job placement %q needs binding %s (a claim chooses GPUs and devices together)", p.Name, p.Job, InClaim))
		}
	}
	if c.Workers <= 0 {
		c.Workers = runtime.GOMAXPROCS(0)
	}
	if len(errs) > 0 {
		msgs := make([]string, len(errs))
		for i, e := range errs {
			msgs[i] = e.Error()
		}
		return c, fmt.Errorf("%w: %s", ErrConfig, strings.Join(msgs, "; "))
	}
	return c, nil
}

// oneOf sets an empty *v to def (the default) and checks that it is def or
// one of others.
func oneOf[T ~string](field string, v *T, def T, others ...T) error {
	if *v == "" {
		*v = def
	}
	all := append([]T{def}, others...)
	if slices.Contains(all, *v) {
		return nil
	}
	want := make([]string, len(all))
	for i, a := range all {
		want[i] = string(a)
	}
	return fmt.Errorf("%s: %q, want one of %s", field, *v, strings.Join(want, ", "))
}
