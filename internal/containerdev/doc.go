// Package containerdev is what a container gets for an RDMA device, in one
// place for every way Railyard hands one out (the device plugin's Allocate,
// late binding's CDI specs, the DRA driver's CDI specs, railyard-cni):
//
//   - the device nodes: the device's own verbs char device, rdma_cm unless
//     the pool turns it off, the port's umad and issm when asked (Options),
//     each at the same path under /dev/infiniband in the container as under
//     the host's dev root, and as CDI device nodes (CDINodes);
//   - the environment: PCIDEVICE_<POOL> and its _INFO (the SR-IOV device
//     plugin's variables), RAILYARD_RDMA_DEVICES_<POOL>, in rail order, and
//     the NCCL settings (Env; Settings is their table: name, source, when
//     set): NCCL_IB_HCA, what the operator configured (NCCL: cross-NIC,
//     a fabric profile, the socket interface, the GID address family),
//     NCCL_CROSS_NIC from the fabric (Device.Leaf), and Railyard's
//     defaults only where the pod's own variables win over them
//     (EnvOptions.Overridable);
//   - the RoCE v2 GID index of a pod's HCA for its netdev's address
//     (PickGID, over sysfs.GIDTable) and the check that the pod's HCAs
//     agree (CheckGIDIndexes), which railyard-cni runs once the address is
//     set;
//   - the Multus device-info-spec 1.1 document (DevInfo) and the name of
//     the file Multus looks a device plugin's document up by (DevInfoPath).
//
// It is a leaf of the node side: it writes no file and reads none, links
// no Kubernetes library (railyard-cni uses it) and knows no pool
// configuration but the switches of Options and the operator's NCCL.
package containerdev
