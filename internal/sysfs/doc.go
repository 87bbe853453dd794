// Package sysfs reads the Linux sysfs attributes Railyard needs (PCI
// functions, network interfaces, RDMA devices and their ports) below a root
// directory that stands for /sys, so tests can point it at a generated tree.
// It only reads; the parsers of attribute values are pure and fuzzed.
package sysfs
