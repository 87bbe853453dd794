// Package deviceplugin serves one Railyard resource pool to kubelet through
// the device plugin API v1beta1: a gRPC server on a unix socket in kubelet's
// device plugin directory, registration with kubelet.sock (again whenever
// kubelet restarts), ListAndWatch with each device's NUMA node and health,
// GetPreferredAllocation through an allocation policy (for gpu-aware, with
// the pod's GPUs found through PodResources), and Allocate returning only
// the device's own verbs node, rdma_cm (umad/issm optional), SR-IOV device
// plugin compatible environment variables, NCCL_IB_HCA, the Multus
// device-info file and optional CDI device names.
//
// Device IDs are PCI addresses, so they survive agent restarts.
package deviceplugin
