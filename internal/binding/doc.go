// Package binding is Railyard's late binding: a device plugin pool in
// "sandbox" binding mode hands kubelet fungible tokens (one per physical
// device of a NUMA node, each advertised with that NUMA node), and the
// physical VF or PF behind a token is chosen only when the pod's sandbox is
// created (railyard-cni ADD) or its first container is about to start (the
// device plugin's PreStartContainer): by then kubelet's PodResources lists
// both the pod's GPUs and its tokens, whatever order kubelet allocated them
// in. The agent also binds earlier, off the pod's start path, as soon as
// PodResources lists a container with what its policy needs (GPUsKnown).
//
// The binding (token -> device) is Railyard's own state, kept in a Store: a
// directory holding the node view the agent publishes (topology and token
// pools, view.json) and the bindings (bindings.json), changed only under an
// exclusive flock and written atomically (temporary file, fsync, rename,
// directory fsync). A process dying at any step leaves either the old or the
// new bindings, never a device bound twice. Each bound token has a CDI spec
// (written after the bindings, removed before them, and re-derived from them
// by Reconcile) that gives the container the bound device's verbs char
// devices, rdma_cm, NCCL_IB_HCA, PCIDEVICE_* and RAILYARD_RDMA_DEVICES_*.
//
// Bindings are released by railyard-cni DEL (the sandbox that bound them),
// by a later bind of the same token for another pod (kubelet gave the token
// to that pod, so the old pod is gone), and by GC against PodResources.
//
// The package is used by the agent and by railyard-cni; it links the
// allocation policies, the topology model and the PodResources client, but
// not client-go.
package binding
