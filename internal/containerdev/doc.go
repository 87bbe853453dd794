// Package containerdev is what a container gets for an RDMA device, in one
// place for every way Railyard hands one out (the device plugin's Allocate,
// late binding's CDI specs, the DRA driver's CDI specs, railyard-cni):
//
//   - the device nodes: the device's own verbs char device, rdma_cm unless
//     the pool turns it off, the port's umad and issm when asked (Options),
//     each at the same path under /dev/infiniband in the container as under
//     the host's dev root, and as CDI device nodes (CDINodes);
//   - the environment: PCIDEVICE_<POOL> and its _INFO (the SR-IOV device
//     plugin's variables), RAILYARD_RDMA_DEVICES_<POOL> and NCCL_IB_HCA, in
//     rail order (Env);
//   - the Multus device-info-spec 1.1 document (DevInfo) and the name of
//     the file Multus looks a device plugin's document up by (DevInfoPath).
//
// It is a leaf of the node side: it writes no file and reads none, links
// no Kubernetes library (railyard-cni uses it) and knows no pool
// configuration but the three switches of Options.
package containerdev
