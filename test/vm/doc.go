// Package vm holds real-kernel tests that run inside the QEMU VM of
// `make vmtest` (hack/vm): discovery of a real SR-IOV tree (igb PFs under a
// root port and behind a PCIe switch on NUMA node 1, igbvf VFs), node setup
// creating and removing real VFs, the RDMA subsystem's netns mode switch
// and a real perftest run over Soft-RoCE (rdma_rxe) parsed by `railyard
// bench parse`. Every test skips outside the VM (vmkernel.Require).
package vm
