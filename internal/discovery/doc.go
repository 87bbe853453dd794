// Package discovery reads a node's PCIe fabric from sysfs into a
// topology.Topology: the PCI tree under each host bridge, the GPUs, the
// RDMA-capable physical functions with their netdevs, RDMA and verbs devices,
// ports and SR-IOV virtual functions. It is read-only and never panics on a
// messy tree: unreadable files, numa_node -1, VFs bound to vfio, devices that
// vanish during the walk all become warnings in the result.
package discovery
