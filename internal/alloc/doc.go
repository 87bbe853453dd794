// Package alloc holds Railyard's allocation policies: pure functions that
// choose which RDMA devices (VFs or whole PFs, named by PCI address) a pod
// gets, given the node's topology, the free devices, the devices kubelet says
// must be included, the requested count and, when known, the pod's GPUs.
package alloc
