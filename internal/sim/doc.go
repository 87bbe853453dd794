// Package sim simulates a cluster of identical GPU nodes to compare NIC
// allocation policies side by side: a seeded workload of pods arrives and
// leaves, a simple scheduler places each pod on a node, a model of the
// stock kubelet (Topology Manager over NUMA nodes) and of the NVIDIA device
// plugin chooses its GPUs, and each policy chooses its RDMA devices. Every
// policy sees the same workload; the results are the fraction of GPUs whose
// nearest allocated NIC is GPUDirect-capable (PIX or PXB), the class
// histogram, modelled bandwidth, rejected pods, stranded devices and the
// policies' decision latency.
//
// All nodes share one immutable *topology.Topology (the machine model); a
// node's state is only which GPUs and devices are free.
package sim
