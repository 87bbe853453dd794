// Package nodefabric keeps this node's fabric view current and published:
// every interval it fills each NIC port's neighbor (Neighbors: LLDP heard
// on the RoCE ports for up to a wait that covers a switch's transmit
// interval, and meanwhile each InfiniBand port's neighbor asked of the
// subnet with smpquery through an injected runner, internal/ibneighbor),
// with the ports' rails (internal/fabric), holds for a few rounds the
// neighbors a port did not hear this round (Hold: a missed frame or a
// switch agent restarting does not move the node's labels; past the hold,
// or after a shutdown frame, the rail is degraded and keeps its last
// switch; a port that heard several neighbors keeps naming the one it
// named before), and writes them on its own Node object: the ports as the
// railyard.io/fabric-ports annotation, which `railyard fabric` reads and
// the next round holds from, and the labels schedulers read
// (rail.railyard.io/<i>, the leaf set, railyard.io/degraded-rails). It
// writes nothing else: labels under those keys that no longer hold are
// removed, every other label and annotation is left alone, and a publish
// that would change nothing sends no request. `railyard topo --neighbors`
// uses Neighbors too.
//
// UnitLabeler is the cluster's one writer of the unit label, the level
// above the leaf set: it reads every node's annotation, groups the nodes
// (fabric.UnitLabels) and patches each node's unit label, that key only.
//
// `railyard fabric publish --watch` runs the publisher (the chart's fabric
// DaemonSet) and `railyard fabric label-units --watch` the unit writer
// (its one-replica Deployment); the chart gives each its own service
// account and an admission policy that lets the publisher change only its
// keys of its own node, and the unit writer only the unit label.
package nodefabric
