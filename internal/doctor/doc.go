// Package doctor answers "is this node ready for GPU RDMA?" with a list of
// checks, each saying what it read, what it found and how to fix it.
//
// The checks are one table (checks.go: each check's ids, one line, and its
// function), which Run runs, `railyard doctor --help` prints (Checks) and
// docs/doctor.md describes row by row; a test fails when this list or
// that page misses one:
//
//   - gpus, nics: GPUs and RDMA NICs present
//   - policy-pf: each PF of the node policy is an RDMA NIC of the node
//   - gpu-nic: a NIC within PXB of every GPU
//   - pcie-link: each GPU's and NIC's PCIe link, and every bridge's above
//     it, trained at its capability
//   - ports: RDMA ports ACTIVE and LinkUp
//   - rdma-errors: each PF port's error counters, read twice,
//     Options.CounterWindow apart, judged by internal/rdmacounter's table
//   - link-layer: each PF's link layer as the node policy says
//   - roce-gid: a routable RoCE v2 GID on each Ethernet port
//   - roce-qos, roce-qos-consistent, roce-dscp, roce-dscp-consistent: each
//     RoCE NIC's lossless configuration (PFC, trust, ECN) and each RoCE
//     port's DSCP traffic class, alike across the node
//   - firmware: NIC firmware alike per model, none that Options.Firmware
//     refuses
//   - mtu: netdev MTU against the RDMA MTU
//   - sriov: SR-IOV VF counts against the node policy
//   - vf-guids: InfiniBand VF GUIDs non-zero and unique
//   - pkey: VF pkey tables hold the node policy's pkey
//   - rdma-netns: the RDMA netns mode
//   - memlock: the container runtime's memlock limit
//   - gpudirect: the GPUDirect kernel module (nvidia_peermem) or DMA-BUF
//   - acs: PCIe ACS on the bridges between each GPU and its NIC
//   - iommu: the IOMMU mode of the GPUs' and NICs' groups
//
// Hardware facts come from internal/discovery and internal/sysfs (the only
// sysfs readers); /proc, /etc and /lib files are read through HostFiles, a
// root directory, so tests point both at generated trees. The RDMA netns
// mode comes from netlink through a one-method interface. Checks that an
// unprivileged user cannot make (PCI extended config space) say so and are
// skipped, never guessed.
package doctor
