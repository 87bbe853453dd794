// Package ibneighbortest provides Fake, a fake smpquery for
// ibneighbor.Runner that answers with canned outputs per (CA, port,
// operation), and writers of those outputs in smpquery's format
// (NodeInfo, NodeDesc, PortInfo), so that tests of InfiniBand neighbors
// (internal/ibneighbor, internal/nodefabric) need no infiniband-diags,
// no InfiniBand port and no subnet. Tests only.
package ibneighbortest
