//go:build e2e

// Package framework starts and tears down a real Kubernetes for
// Railyard's end-to-end tests. Start brings up a single node: etcd,
// kube-apiserver, kube-scheduler, containerd and kubelet, each a real process with its own directories under
// one run directory, plus a private Linux bridge whose address is the node IP.
//
// Nothing is faked: pods really run (busybox from a locally built OCI image),
// the scheduler really schedules and the kubelet really talks to device
// plugins. Teardown kills by PID and cleans by path (mounts, cgroups, network
// namespaces, the bridge, entries the run created in the kubelet's fixed
// directories, and containerd shims found by the socket on their command
// line); it never looks processes up by name.
//
// StartMulti starts a cluster of several nodes on one machine (the one of
// hack/cluster/up.sh): the same control plane plus kube-controller-manager,
// a control-plane node and GPU nodes, each node a kubelet and a containerd
// in mount, network and PID namespaces of its own (unshare, nsenter), each
// GPU node with a fake machine (generated sysfs tree, RDMA device nodes,
// its NICs as veths) cabled to a rail fabric (a leaf bridge per rail in a
// fabric namespace, a switchable spine). DownMulti tears it down from the
// state it saved, also after a killed owner; AttachMulti connects tests to
// a running one.
//
// The package only builds with the e2e build tag. See docs/e2e.md.
package framework
