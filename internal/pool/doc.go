// Package pool selects the devices of one resource pool from the node's
// topology: SR-IOV virtual functions or whole physical functions that match
// the pool's selectors (vendor and device IDs, drivers, PF names with VF
// index ranges, PCI addresses, link layer, RDMA capability, NUMA node), and
// judges each device's health from its ports. It is pure: it reads only the
// topology value it is given.
package pool
