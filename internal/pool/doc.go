// Package pool selects the devices of one resource pool from the node's
// topology: SR-IOV virtual functions, whole physical functions, or shares
// of whole physical functions (sharedLimit pods per NIC, IDs
// "<PF address>-s<k>") that match the pool's selectors (vendor and device
// IDs, drivers, PF names with VF index ranges, PCI addresses, link layer,
// RDMA capability, NUMA node), and judges each device's health from its
// ports. Each device carries its rail index (the first GPU its PF serves),
// which orders NCCL_IB_HCA. It is pure: it reads only the topology value
// it is given.
package pool
