// Package fabric is Railyard's view of the cluster's rail fabric: which
// leaf switch each node's NIC of each rail is cabled to, and what is
// wrong with that wiring.
//
// In a rail-optimized cluster NIC i of every node is cabled to leaf i, so
// a job whose pods use the same rails on every node talks through one leaf
// per rail. A node reports its ports (Port: its in-node rail, the NIC, and
// the LLDP neighbor the agent heard on it, internal/lldp); Analyze puts the
// nodes side by side as a rail x node matrix, takes the leaf most nodes
// reach on each rail as that rail's leaf, and reports what disagrees: a
// NIC cabled to another rail's leaf (a swapped cable), a NIC with no
// neighbor, a node on a leaf none of its peers on that rail use, mixed
// speeds or MTUs on one rail. Labels derives the node labels that
// topology-aware schedulers (Kueue TAS levels, Volcano, KEP-5732) read
// from one node's own ports.
//
// It is pure: no cluster access, no sysfs; the agent and `railyard
// fabric` feed it.
package fabric
