//go:build e2e

// Package framework starts and tears down a real single-node Kubernetes for
// Railyard's end-to-end tests: etcd, kube-apiserver, kube-scheduler,
// containerd and kubelet, each a real process with its own directories under
// one run directory, plus a private Linux bridge whose address is the node IP.
//
// Nothing is faked: pods really run (busybox from a locally built OCI image),
// the scheduler really schedules and the kubelet really talks to device
// plugins. Teardown kills by PID and cleans by path (mounts, cgroups, network
// namespaces, the bridge, entries the run created in the kubelet's fixed
// directories, and containerd shims found by the socket on their command
// line); it never looks processes up by name.
//
// The package only builds with the e2e build tag. See docs/e2e.md.
package framework
