// Package lldptest runs a real lldpd (Debian's lldpd package) as a leaf
// switch in a network namespace, for tests of LLDP listening: the lldp
// package's own, `railyard topo --neighbors` and the multi-node cluster's
// fabric. Tests only.
package lldptest
