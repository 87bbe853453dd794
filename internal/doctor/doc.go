// Package doctor answers "is this node ready for GPU RDMA?" with a list of
// checks, each saying what it read, what it found and how to fix it:
// GPUs and RDMA NICs present, a NIC within PXB of every GPU, ports ACTIVE
// with the expected link layer, RoCE v2 GIDs, netdev vs RDMA MTU, SR-IOV
// VF counts against the node policy, InfiniBand VF GUIDs non-zero and
// unique, VF pkey tables, the RDMA netns mode, the container runtime's
// memlock limit, the GPUDirect kernel module (nvidia_peermem) or DMA-BUF,
// PCIe ACS on the bridges between each GPU and its NIC, the IOMMU mode,
// and each PF port's error counters (rdma-errors: read twice,
// Options.CounterWindow apart, judged by internal/rdmacounter's table).
//
// Hardware facts come from internal/discovery and internal/sysfs (the only
// sysfs readers); /proc, /etc and /lib files are read through HostFiles, a
// root directory, so tests point both at generated trees. The RDMA netns
// mode comes from netlink through a one-method interface. Checks that an
// unprivileged user cannot make (PCI extended config space) say so and are
// skipped, never guessed.
package doctor
