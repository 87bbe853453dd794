package alloc

import "github.com/railyard-io/railyard/internal/topology"

// Request is one allocation decision, shaped like kubelet's
// GetPreferredAllocation request plus what Railyard knows about the pod.
type Request struct {
	// Topology is the node's model. Device IDs are PCI addresses of VFs or
	// PFs that appear in it.
	Topology *topology.Topology
	// Available are the device IDs that may be returned (free devices).
	Available []string
	// MustInclude are device IDs that must be part of the answer; each is
	// also in Available.
	MustInclude []string
	// Size is the exact number of devices to return.
	Size int
	// GPUs are the PCI addresses of the GPUs the pod holds, when known.
	GPUs []string
}

// Result is a policy's answer.
type Result struct {
	// Devices are the chosen device IDs, len(Devices) == Request.Size.
	Devices []string
	// Policy names the policy that decided: the one asked, or the one it
	// fell back to ("spread" when gpu-aware did not know the pod's GPUs).
	// For logs and metrics.
	Policy string
	// Reasons explain the choice, one line each, for logs and tests.
	Reasons []string
}

// Needs says what a policy uses beyond the offered devices, so adapters
// gather only that (a PodResources call per request, for instance), and
// how it wants what adapters decide on its behalf.
type Needs struct {
	// PodGPUs: the policy places devices by the pod's GPUs (Request.GPUs).
	PodGPUs bool
	// PackShares: where an adapter splits a device into shares, it takes
	// shares of the device with the fewest free first (others spread: the
	// most free first).
	PackShares bool
}

// Policy chooses devices. Implementations are pure and safe for concurrent
// use: they read the request and return a new result.
type Policy interface {
	Name() string
	Needs() Needs
	Allocate(req Request) (Result, error)
}
