// Package nodefabric keeps this node's fabric view current and published:
// every interval it listens for LLDP on the node's NIC ports (for up to a
// wait that covers a switch's transmit interval), fills the ports' rails
// and neighbors (internal/fabric), and writes them on its own Node object:
// the ports as the railyard.io/fabric-ports annotation, which `railyard
// fabric` reads, and the labels schedulers read (rail.railyard.io/<i>,
// railyard.io/leaf-set). It writes nothing else: labels under those keys
// that no longer hold are removed, every other label and annotation is
// left alone, and a publish that would change nothing sends no request.
//
// The agent runs it (internal/agent); the chart gives the agent get and
// patch on nodes and an admission policy that lets it change only these
// keys of its own node.
package nodefabric
