// Package benchverify checks a running job (`railyard bench verify`):
// from its pods' own logs and the devices Railyard gave them, whether the
// job is on RDMA, on its near NICs with GPUDirect RDMA, and on the same
// rails across its pods.
//
//   - Logs: each pod's containers' logs are read from the API server, at
//     most Options.LogBytes of each (NCCL prints its INFO lines at
//     communicator init, at the head of the log), and their NCCL INFO
//     lines judged by internal/bench (nccl-network, nccl-gdr,
//     nccl-hosts), the NCCL HCAs' nearness taken from the devices below.
//   - Devices: a pod's ResourceClaims (status.allocation: the
//     rdma.railyard.io devices with their railyard.io/rail, leaf,
//     rdmaDevice and per-GPU class attributes from the cluster's
//     ResourceSlices, and the GPUs of other drivers with their pciBusID
//     and pcieRoot), and its Multus network-status annotation (the
//     device-info document Railyard writes: PCI address, RDMA device),
//     whose rail comes from the node's railyard.io/fabric-ports where the
//     RDMA device is a whole NIC.
//
// It adds three checks of its own: job-devices (every pod got RDMA
// devices from Railyard), job-near (each pod's NICs are near, PIX or PXB,
// to one of its GPUs) and job-rails (every pod is on the same rails, and
// NCCL used the HCAs the pod got). Every API request has its own bound; a
// pod whose log cannot be read is reported, never dropped.
//
// It reads the cluster through client-go's kubernetes.Interface (the
// tests use its fake clientset) and writes nothing.
package benchverify
