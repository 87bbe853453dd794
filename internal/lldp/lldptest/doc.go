// Package lldptest runs a real lldpd (Debian's lldpd package) as a leaf
// switch in a network namespace, for tests of LLDP listening: the lldp
// package's own, `railyard topo --neighbors` and the multi-node cluster's
// fabric. A leaf can be stopped as its service stops (SIGTERM: a shutdown
// frame) or paused and resumed (SIGSTOP, SIGCONT: silent, as a hung switch
// agent). Tests only.
package lldptest
