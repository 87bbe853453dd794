// Package topology is Railyard's model of one node: the PCI tree, the GPUs,
// the RDMA NICs (physical functions with their ports and virtual functions),
// the distance class of every GPU x NIC pair, and the rails (the optimal
// one-NIC-per-GPU assignment).
//
// A Topology is built once by Discover from a sysfs root and is never
// modified afterwards: callers treat every slice and map in it as read-only.
// Everything else in Railyard (allocation policies, the device plugin, the CNI
// plugin, the simulator) consumes this value instead of reading /sys itself.
package topology
