// Package netopstest provides Fake, an in-memory netops.Ops for tests. It
// models namespaces, links (names, kernel altnames, alias, MTU, MAC, up
// state, addresses), SR-IOV VF settings kept on a PF and RDMA devices with
// their namespace, enforces the kernel's name-collision rules, records every
// call, and fails the k-th mutating call on request so tests can inject a
// fault at every step of a multi-step operation.
package netopstest
