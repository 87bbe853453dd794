// Package netops is the one narrow place where railyard-cni changes the
// operating system: network links (rename, kernel altnames, alias, MTU, MAC,
// up/down), moves between network namespaces, addresses, SR-IOV VF settings
// applied through the PF, RDMA device netns moves and the RDMA netns mode
// check, and a multi-rail pod's per-interface sysctls (/proc/sys in the
// pod's namespace), routing tables and rules; WithSysfs mounts a sysfs in
// a pod's namespace, where an RDMA device moved into the pod shows.
//
// Ops is the contract. Linux implements it over vishvananda/netlink and
// containernetworking/plugins/pkg/ns; namespaces are named by their path
// ("/var/run/netns/x", "/proc/<pid>/ns/net"), and "" means the namespace the
// caller runs in (the host). The sub-package netopstest holds an in-memory
// fake that records every call and can inject a failure at any call; only
// tests use it. VF-through-PF settings and RDMA netlink cannot run on a
// machine without SR-IOV or RDMA hardware, so they are exercised through the
// fake there, while links, namespaces and addresses run for real in tests;
// in the VM of `make vmtest` (hack/vm) they run against a real igb PF and
// the real RDMA subsystem (tests named RealVF/RealRDMA), and TestVFContract
// runs one table on that kernel and on the fake.
package netops
