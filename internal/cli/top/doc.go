// Package top is `railyard top`: the node's RDMA traffic, errors and
// congestion per device, port and holding pod, refreshed like top(1). It
// reads the counters through internal/rdmacounter (no Prometheus, no
// agent) and asks kubelet's PodResources which container holds each
// device the device plugin handed out by PCI address.
package top
