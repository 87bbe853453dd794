// Package draplugin is Railyard's DRA kubelet plugin: the driver
// rdma.railyard.io that k8s.io/dynamic-resource-allocation/kubeletplugin
// serves to the kubelet.
//
// A Driver publishes the node's ResourceSlices (internal/dra's Build and
// DriverResources over the latest topology, republished on every
// rediscovery, so a DOWN port or a removed VF leaves the slices) and
// prepares claims: for each device a claim was allocated from this driver
// it writes a CDI spec (kind rdma.railyard.io/claim, one spec file per
// claim, one CDI device per allocated device) that gives the container
// exactly that device's verbs char device, rdma_cm (and umad/issm when the
// pool asks for them), the SR-IOV device plugin's PCIDEVICE_* variables
// and NCCL_IB_HCA listing all the claim's RDMA devices in rail order.
// Prepared claims are checkpointed in a state directory (temporary file,
// fsync, rename, directory fsync) before their CDI spec exists, so an
// agent restart loses nothing; Unprepare of an unknown claim succeeds.
//
// Each claim's record keeps the pods of its status.reservedFor, and the
// driver publishes the DRA view (internal/draview: the node's DRA pools,
// each prepared claim's pods and devices) before Prepare returns, which
// is before the kubelet creates the pod's sandbox: railyard-cni reads it
// at the sandbox's CNI ADD and moves the claim's netdev (and RDMA device)
// into the pod's network namespace (see docs/dra.md).
//
// The package is a library: it does not log (errors from the helper's
// background work go to Config.OnError) and reads no sysfs (the caller
// hands it topologies).
package draplugin
