// Package ibneighbor learns what an InfiniBand port is cabled to: the
// node at the other end of the cable (hop 1 of a directed route from the
// port), normally a leaf switch. InfiniBand has no LLDP; the subnet's
// management datagrams tell it. Without a Go MAD library, it runs
// infiniband-diags' smpquery where installed:
//
//	smpquery -C <ca> -P <port> -D nodeinfo 0,1   # NodeGUID, NodeType, LocalPort
//	smpquery -C <ca> -P <port> -D nodedesc 0,1   # NodeDesc: the switch's name
//
// and, only when the first fails, `smpquery -C <ca> -P <port> -D portinfo
// 0 <port>` (the local port, which answers while the link is down) to say
// whether the port is down. Query returns the neighbor in the shape the
// LLDP side uses (lldp.Neighbor: chassis ID = the node GUID as
// 0x0002c9030000abcd, port ID = the switch port the cable lands on,
// system name = NodeDesc), or why there is none: smpquery not installed,
// the port down, the query failed (with what smpquery said), or a node at
// hop 1 that is not a switch (a back-to-back cable: the neighbor comes
// back with ErrNotSwitch).
//
// The commands go through Runner (Exec runs them with a timeout and
// bounded output; tests use ibneighbortest.Fake). The parsers never panic
// on any input (fuzzed) and read smpquery's output as libibmad prints it
// (parse.go names the source). Directed-route SMPs need read-write access
// to the port's umad device; docs/fabric.md says what a pod needs.
package ibneighbor
