// Package topo implements `railyard topo`: it discovers a node's PCIe fabric
// (live /sys, a sysfs tree, or a built-in machine model) and prints the
// GPU x NIC distance matrix, the NICs, the rails and the warnings, or the
// same as JSON.
package topo
