// Package sysfstest builds small fake sysfs trees for railyard-cni tests: a
// PCI function with its netdev (so a veth can stand in for a VF with a PCI
// address), an RDMA device, and PF/VF links.
package sysfstest
