//go:build e2e

// Package multinode is the end-to-end suite on the multi-node cluster of
// hack/cluster/up.sh (a control plane with kube-controller-manager, a
// control-plane node and GPU nodes each with its own kubelet and containerd
// in namespaces of their own, a fake machine per GPU node and a rail
// fabric): the chart installed with Helm's SDK runs the agent on every GPU
// node through the real DaemonSet controller, and pods on two nodes talk
// over a rail. Build tag e2e; see docs/e2e.md.
package multinode
