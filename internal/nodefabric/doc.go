// Package nodefabric keeps this node's fabric view current and published:
// every interval it fills each NIC port's neighbor (Neighbors: LLDP heard
// on the RoCE ports for up to a wait that covers a switch's transmit
// interval, and meanwhile each InfiniBand port's neighbor asked of the
// subnet with smpquery through an injected runner, internal/ibneighbor),
// with the ports' rails (internal/fabric), and writes them on its own
// Node object: the ports as the railyard.io/fabric-ports annotation,
// which `railyard fabric` reads, and the labels schedulers read
// (rail.railyard.io/<i>, railyard.io/leaf-set). It writes nothing else:
// labels under those keys that no longer hold are removed, every other
// label and annotation is left alone, and a publish that would change
// nothing sends no request. `railyard topo --neighbors` uses Neighbors
// too.
//
// `railyard fabric publish --watch` runs it (the chart's fabric
// DaemonSet); the chart gives its service account get and patch on nodes
// and an admission policy that lets it change only these keys of its own
// node.
package nodefabric
