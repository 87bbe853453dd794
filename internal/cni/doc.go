// Package cni implements the railyard-cni plugin: it attaches an RDMA NIC
// (an SR-IOV VF or a whole PF) and its RDMA device to a pod's network
// namespace as one unit, and never leaves a device half-configured.
//
// Every change goes through netops.Ops. Before the first change ADD writes a
// state.Record under a per-device flock; any failure then converges the
// device back to the host state the record describes (teardown), and only a
// successful teardown removes the record. DEL, GC and a failed ADD share
// that one idempotent teardown, so DEL can be repeated, run after the netns
// is gone, after the record was removed (best effort, from the alias marker
// left on the netdev) or by a new process after a restart.
//
// An attached interface also gets multi-rail ARP settings and source
// routing (multirail.go; config multiRail), and ADD records the RoCE v2
// GID index of its RDMA device for its address and checks it against the
// pod's other HCAs (gid.go).
//
// Run adapts Plugin to the CNI skel (ADD, DEL, CHECK, STATUS, GC, VERSION)
// and maps errors to CNI error codes.
package cni
