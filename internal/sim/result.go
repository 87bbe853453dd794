package sim

import (
	"time"

	"github.com/railyard-io/railyard/internal/topology"
)

// Result is one simulation: the JSON of `railyard simulate --json`. The
// fields machine, nodes, pods and policies (name, gdr_fraction, mean_gbps,
// rejected, alloc_p99_us) are a contract; the others may grow.
type Result struct {
	Machine  string         `json:"machine"`
	Nodes    int            `json:"nodes"`
	Pods     int            `json:"pods"`
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
}

func describe(cfg Config, m *machine) Settings {
	return Settings{
		Seed: cfg.Seed, Mix: cfg.Mix, Devices: cfg.Devices, Load: cfg.Load,
		TopologyPolicy: string(cfg.TopologyPolicy), Scheduler: string(cfg.Scheduler),
		GPUsKnown: *cfg.GPUsKnown, Bandwidth: cfg.Bandwidth.String(),
		GPUsPerNode: len(m.gpus), DevicesPerNode: len(m.devs), PFsPerNode: len(m.topo.NICs),
	}
}

// PolicyResult is what one policy achieved on the workload.
type PolicyResult struct {
	Name string `json:"name"`
	// Binding is when the policy chose the devices (allocate, sandbox or
	// claim), which decided what it knew.
	Binding Binding `json:"binding"`
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
	GPUs             int     `json:"gpus_placed"`
	GDRGPUs          int     `json:"gdr_gpus"`
	Events           int     `json:"events"`
	// PolicyCalls is how often the policy was asked: a pure policy's
	// answer to a request it answered before is reused (Config.AskEveryPod).
	PolicyCalls int `json:"policy_calls"`
	TimedPods   int `json:"timed_pods"`
	// Elapsed is the wall time of this policy's replay.
	Elapsed time.Duration `json:"-"`
}

// HistBin is one bin of a distribution.
type HistBin struct {
	GBps float64 `json:"gbps"`
	Pods int     `json:"pods"`
}

// ClassCount returns the GPUs whose nearest NIC had class c.
func (p PolicyResult) ClassCount(c topology.Class) int { return p.Classes[c.String()] }
