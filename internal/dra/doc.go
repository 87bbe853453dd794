// Package dra builds what Railyard publishes to Kubernetes' Dynamic
// Resource Allocation (resource.k8s.io/v1): the ResourceSlice devices of a
// node, one per allocatable RDMA unit (an SR-IOV virtual function or a
// whole physical function, per the pool's deviceKind), computed from the
// topology model and the agent's pool configuration. It reads nothing
// else: no sysfs, no API server.
//
// Each device is named from its PCI address ("pci-0000-18-00-2", a DNS
// label that survives restarts and netns moves) and carries the standard
// attributes resource.kubernetes.io/pcieRoot (the PCI host bridge, the
// value k8s.io/dynamic-resource-allocation/deviceattribute reads from
// sysfs), resource.kubernetes.io/pciBusID and, when known,
// resource.kubernetes.io/numaNode, plus Railyard's own under railyard.io/
// (RDMA device, link layer, speed, VF/PF, rail, PCIe switch and root port,
// distance class to each GPU). Unhealthy devices (topology.NIC.Health,
// VFHealth, and a missing verbs device, as internal/pool judges them) are
// not published, or, where the API server keeps device taints
// (Options.TaintUnhealthy), published with a NoSchedule taint (TaintKey).
// A device a prepared claim holds whose PCI function left the bus
// (GoneReason) is published as it was with a NoExecute taint there, so its
// pods are evicted, and left out elsewhere.
// Each pool's Health lists every device's health for the kubelet's pod
// status. A pool's devices are split into slices of at most
// resourceapi.ResourceSliceMaxDevices (64 while one is tainted).
//
// The package is a library: it does not log, holds no state, and links
// nothing of the agent or the CLI. The kubelet plugin that publishes these
// slices and prepares claims is internal/draplugin, which the agent runs
// (see docs/dra.md).
package dra
