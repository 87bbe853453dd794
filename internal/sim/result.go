package sim

import (
	"time"

	"github.com/railyard-io/railyard/internal/topology"
)

// Result is one simulation: the JSON of `railyard simulate --json`. The
// fields machine, nodes, pods and policies (name, gdr_fraction, mean_gbps,
// rejected, alloc_p99_us) are a contract; the others may grow.
type Result struct {
	Machine string `json:"machine"`
	Nodes   int    `json:"nodes"`
	// Pods is the pod arrivals, Jobs the job arrivals they came in (a
	// single pod is a job of one pod).
	Pods     int            `json:"pods"`
	Jobs     int            `json:"jobs"`
	Events   int            `json:"events"`
	Config   Settings       `json:"config"`
	Policies []PolicyResult `json:"policies"`
	// Elapsed is the wall time of the whole simulation.
	Elapsed time.Duration `json:"-"`
}

// Policy returns the result of the named policy.
func (r *Result) Policy(name string) (PolicyResult, bool) {
	for _, p := range r.Policies {
		if p.Name == name {
			return p, true
		}
	}
	return PolicyResult{}, false
}

// Settings echoes the configuration a result came from.
type Settings struct {
	Seed           uint64     `json:"seed"`
	Mix            []MixEntry `json:"mix"`
	Devices        DeviceMode `json:"devices_per"`
	Load           float64    `json:"load"`
	TopologyPolicy string     `json:"topology_policy"`
	Scheduler      string     `json:"scheduler"`
	GPUsKnown      float64    `json:"gpus_known"`
	Bandwidth      string     `json:"bandwidth_model"`
	GPUsPerNode    int        `json:"gpus_per_node"`
	DevicesPerNode int        `json:"devices_per_node"`
	PFsPerNode     int        `json:"pfs_per_node"`
	// RailsPerNode is the node's rails (NICs that serve a GPU); SUNodes
	// the nodes per scalable unit (0: one unit); MaxWait how long a job
	// waits for one rail set, in mean pod lifetimes.
	RailsPerNode int     `json:"rails_per_node"`
	SUNodes      int     `json:"su_nodes"`
	MaxWait      float64 `json:"max_wait"`
	// RechooseAfter is how long a job of AdmissionRailSet waits on its set
	// before another is tried, in mean pod lifetimes.
	RechooseAfter float64 `json:"rechoose_after"`
}

func describe(cfg Config, m *machine) Settings {
	return Settings{
		Seed: cfg.Seed, Mix: cfg.Mix, Devices: cfg.Devices, Load: cfg.Load,
		TopologyPolicy: string(cfg.TopologyPolicy), Scheduler: string(cfg.Scheduler),
		GPUsKnown: *cfg.GPUsKnown, Bandwidth: cfg.Bandwidth.String(),
		GPUsPerNode: len(m.gpus), DevicesPerNode: len(m.devs), PFsPerNode: len(m.topo.NICs),
		RailsPerNode: len(m.rails.railGPUs) - 1, SUNodes: cfg.SUNodes, MaxWait: cfg.MaxWait,
		RechooseAfter: cfg.RechooseAfter,
	}
}

// PolicyResult is what one policy achieved on the workload.
type PolicyResult struct {
	Name string `json:"name"`
	// Binding is when the policy chose the devices (allocate, sandbox or
	// claim), which decided what it knew.
	Binding Binding `json:"binding"`
	// Job is how it placed the pods of a job: "" each on its own,
	// "rail-set" on one rail set.
	Job JobPlacement `json:"job_placement,omitempty"`
	// GDRFraction is the fraction of placed GPUs whose nearest allocated
	// NIC is within PXB (NCCL's default GPUDirect RDMA limit).
	GDRFraction float64 `json:"gdr_fraction"`
	// MeanGbps is the modelled per-GPU bandwidth in GB/s, averaged over
	// placed GPUs (the field name is part of the JSON contract).
	MeanGbps float64 `json:"mean_gbps"`
	// Rejected pods, and why.
	Rejected   int            `json:"rejected"`
	Rejections map[string]int `json:"rejections,omitempty"`
	// AllocP99us is the 99th percentile of the policy's decision time per
	// pod (µs, all of a late-bound pod's decisions together), over
	// TimedPods pods sampled evenly.
	AllocP99us float64 `json:"alloc_p99_us"`
	AllocP50us float64 `json:"alloc_p50_us"`
	AllocMaxus float64 `json:"alloc_max_us"`
	// Classes counts placed GPUs by the class of their nearest allocated NIC.
	Classes map[string]int `json:"classes"`
	// PodBandwidth is the distribution of the pods' mean modelled per-GPU
	// bandwidth, in 0.5 GB/s bins.
	PodBandwidth []HistBin `json:"pod_bandwidth"`
	// StrandedMean is the mean number of free devices (cluster-wide, sampled
	// at every arrival) on PFs whose GPUDirect GPUs (PIX or PXB) are all
	// busy, so only a distant GPU could use them; StrandedFraction divides
	// it by all devices.
	StrandedMean     float64 `json:"stranded_mean"`
	StrandedFraction float64 `json:"stranded_fraction"`
	PodsPlaced       int     `json:"pods_placed"`
	// DevicesHeld is the devices placed pods held; DevicesIdle those of
	// them no GPU of the pod would use, on a PF farther from each of its
	// GPUs than the GPU's nearest (what --devices-per all-pfs strands:
	// held, unused, kept from other pods).
	DevicesHeld int `json:"devices_held"`
	DevicesIdle int `json:"devices_idle"`
	GPUs        int `json:"gpus_placed"`
	GDRGPUs     int `json:"gdr_gpus"`
	Events      int `json:"events"`
	// PolicyCalls is how often the policy was asked: a pure policy's
	// answer to a request it answered before is reused (Config.AskEveryPod).
	PolicyCalls int `json:"policy_calls"`
	TimedPods   int `json:"timed_pods"`
	// MultiPod is what jobs of several pods got; nil when the mix has
	// none.
	MultiPod *MultiPodResult `json:"multi_pod,omitempty"`
	// Elapsed is the wall time of this policy's replay.
	Elapsed time.Duration `json:"-"`
}

// MultiPodResult is what a contender achieved for the jobs of several
// pods (single pods are left out: one pod is always on one rail set).
// Times are in mean pod lifetimes, the simulator's unit.
type MultiPodResult struct {
	// Jobs arrived, placed, and rejected (RejectRails among them).
	Jobs     int `json:"jobs"`
	Placed   int `json:"placed"`
	Rejected int `json:"rejected"`
	// RailConsistent is the share of placed jobs whose pods all use the
	// same rails: the same set of in-node rail indexes of their devices.
	RailConsistent float64 `json:"rail_consistent_jobs"`
	// OneLeafLayer is the share of placed jobs whose traffic stays under
	// one leaf layer: rail-consistent, every pod in one scalable unit.
	OneLeafLayer float64 `json:"one_leaf_layer_jobs"`
	// Waited is the share of placed jobs that waited for one rail set;
	// WaitMean and WaitP99 are over all placed jobs, WaitMax the longest.
	Waited   float64 `json:"waited_jobs"`
	WaitMean float64 `json:"wait_mean"`
	WaitP99  float64 `json:"wait_p99"`
	WaitMax  float64 `json:"wait_max"`
	// GaveUp is the jobs rejected after waiting Config.MaxWait.
	GaveUp int `json:"gave_up"`
	// RailStrandedGPUs is the GPUs stranded by the rail constraint: the
	// GPUs of jobs waiting for one rail set while the cluster had free
	// GPUs enough for them, averaged over the simulated time (GPU time
	// waited over the time of the last arrival); RailStrandedFraction
	// divides it by the cluster's GPUs.
	RailStrandedGPUs     float64 `json:"rail_stranded_gpus"`
	RailStrandedFraction float64 `json:"rail_stranded_fraction"`
	// Rechosen is the re-choices of AdmissionRailSet: a job moved to
	// another rail set after Config.RechooseAfter, before any of its pods
	// started. PartlyStarted is the jobs (placed or given up) some of
	// whose pods started before the others could, and HeldIdleGPUs the
	// GPUs those pods held while waiting for them, averaged over the
	// simulated time like RailStrandedGPUs: capacity taken and not used.
	Rechosen      int     `json:"rechosen"`
	PartlyStarted int     `json:"partly_started"`
	HeldIdleGPUs  float64 `json:"held_idle_gpus"`
}

// HistBin is one bin of a distribution.
type HistBin struct {
	GBps float64 `json:"gbps"`
	Pods int     `json:"pods"`
}

// ClassCount returns the GPUs whose nearest NIC had class c.
func (p PolicyResult) ClassCount(c topology.Class) int { return p.Classes[c.String()] }
