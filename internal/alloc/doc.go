// Package alloc holds Railyard's allocation policies: pure functions that
// choose which RDMA devices (VFs or whole PFs, named by PCI address) a pod
// gets, given the node's topology, the free devices, the devices kubelet says
// must be included, the requested count and, when known, the pod's GPUs.
//
// Policies: spread (one device per rail before doubling up), gpu-aware (each
// GPU a device on its closest PF), packed (fill one PF first), optimal (the
// exact reference), and two baselines that model today's clusters: kubelet
// (sorted device IDs, no preference) and numa (any device on the GPUs' NUMA
// nodes). ByName and Names list them.
//
// Every policy honours kubelet's contract: exactly Size distinct devices,
// only offered ones, every must-include device; an impossible request is an
// ErrInvalidRequest. A device is healthy when all its ports (the VF's own,
// else its PF's) are active; unhealthy devices are used last. Devices the
// topology does not know are used after every known one (kubelet's sorted
// order aside). Quality is measured by Index.Score: the sum over the pod's
// GPUs of the effective rank of the nearest device given (class rank 1 for
// PIX to 5 for SYS, 6 unknown, 7 unhealthy); optimal minimises it exactly.
//
// Each policy value caches an Index (per-topology precomputation) for the
// topologies it sees, so a decision costs one pass over the offered devices.
package alloc
