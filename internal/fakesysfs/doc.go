// Package fakesysfs writes realistic fake sysfs trees for tests, demos and
// the built-in machine models: the real directory layout of
// /sys/devices/pciDDDD:BB/... with the bus/pci/devices, bus/pci/drivers,
// class/net, class/infiniband and class/infiniband_verbs symlinks, PCI
// attributes, RDMA ports with their state, rate, link layer and GIDs, and
// SR-IOV virtual functions. It also mutates trees the way a node changes
// (ports going down, VFs created or removed, VFs rebound to vfio-pci,
// devices vanishing) and writes RDMA ports' counters as a driver exposes
// them (WriteCounters), advancing, wrapping and resetting them as traffic
// and device resets do, so tests of rediscovery, health and counters use
// real files.
//
// Nothing here is used on a real node; only tests and the CLI's --machine
// models call it.
package fakesysfs
