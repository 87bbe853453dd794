// Package lldp learns what each RDMA NIC port is cabled to on an
// Ethernet (RoCE) fabric: it receives LLDP frames passively on a port
// (an AF_PACKET socket bound to ethertype 0x88cc) and decodes them with
// gopacket's LinkLayerDiscovery layers into a Neighbor: the switch's
// chassis ID, port ID, system name and, where it sends them, port
// description, management address and maximum frame size.
//
// Receive returns a port's first neighbor; ReceiveAll listens on every
// port for the whole wait and reports every neighbor each heard
// (Result.Neighbor and Result.Others: data units differing in chassis ID,
// port ID or system name), so that a port hearing two neighbors says so
// instead of naming whichever spoke first.
//
// Receiving sends nothing and changes nothing on the port. Linux bridges
// do not forward LLDP (01:80:c2:00:00:0e), so the neighbor is the switch
// the port is cabled to, never a host behind it. ConnectX firmware can
// consume LLDP itself (its DCBX/LLDP agent, mlxconfig LLDP_NB_RX_MODE),
// and then the host sees no frame: Receive says "no LLDP frame within"
// the wait, which docs/topology.md explains.
//
// A frame is malformed when gopacket refuses it, when a TLV that may
// appear once (chassis ID, port ID, TTL, port description, system name or
// description) appears twice, when its TTL is not two bytes, or when it is
// larger than a port receives: ReceiveAll counts such frames per port
// (Result.Malformed) and the reason a port has no neighbor says how many.
// A shutdown frame (TTL 0) withdraws the neighbor of its chassis and port
// ID (ErrShutdown when none is left) unless a valid frame follows within
// the wait; a neighbor whose TTL ran out is dropped when another's holds.
//
// Decode never panics on any input (fuzzed); it is pure and runs
// anywhere. Receive needs CAP_NET_RAW and a port in the caller's network
// namespace.
package lldp
