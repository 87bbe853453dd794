// Package deviceplugin serves one Railyard resource pool to kubelet through
// the device plugin API v1beta1: a gRPC server on a unix socket in kubelet's
// device plugin directory, registration with kubelet.sock (again whenever
// kubelet restarts), ListAndWatch with each device's NUMA node and health,
// GetPreferredAllocation through an allocation policy (for gpu-aware, with
// the pod's GPUs found through PodResources; for shared pools, shares
// spread over NICs), and Allocate returning only the device's own verbs
// node, rdma_cm (umad/issm optional), SR-IOV device plugin compatible
// environment variables, the per-pool RAILYARD_RDMA_DEVICES_<pool>,
// NCCL_IB_HCA (or, with RailGroups, one merged NCCL configuration per
// container across pools: a mounted file and a CDI spec), the Multus
// device-info file and optional CDI device names. The nodes, variables
// and device-info document are internal/containerdev's, as late binding's
// and the DRA driver's are. A pool keeps its device-info files to the
// devices PodResources lists (Config.Holders) and removes them all when
// Run returns (devinfo.go).
//
// Device IDs are PCI addresses (or "<PCI address>-s<k>" for shares), so
// they survive agent restarts. A pool in sandbox binding mode (Config.Binder)
// advertises tokens instead (internal/binding): Allocate returns one CDI
// device per token, and PreStartContainer binds the tokens to devices
// before the container is created (tokens.go).
package deviceplugin
