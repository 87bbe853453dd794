// Package vmkernel holds the helpers of the real-kernel tests that run in
// the QEMU VM of `make vmtest` (hack/vm): a gate that skips them anywhere
// else, and the VM's SR-IOV hardware (QEMU's emulated Intel 82576, driver
// igb, with igbvf VFs) and RDMA subsystem (rdma_rxe). Tests only.
package vmkernel
