package rdmacounter

import "github.com/railyard-io/railyard/internal/sysfs"

// Unit is what a counter counts once scaled.
type Unit string

const (
	Bytes   Unit = "bytes"
	Packets Unit = "packets"
	Events  Unit = "events"
	// Ticks are the PMA's sample ticks (PortXmitWait): time the port had
	// data to send and could not, in the hardware's tick.
	Ticks Unit = "ticks"
)

// Kind groups counters for views and health: traffic, errors, congestion.
type Kind string

const (
	Traffic    Kind = "traffic"
	Error      Kind = "error"
	Congestion Kind = "congestion"
)

// Health says what a rise of an error counter over a short window means
// for its port (railyard doctor's rdma-errors check judges by it).
type Health string

const (
	// NoHealth: a rise is not judged (traffic, congestion, and error
	// counters whose rise does not point at the link or the transport:
	// receive buffer drops, RNR NAKs, duplicates, ICRC and receive errors).
	NoHealth Health = ""
	// LinkFault: the port's physical link erred, recovered from errors or
	// went down (cable, transceiver, switch port).
	LinkFault Health = "link-fault"
	// TransportFailure: a request exhausted its retries; its queue pair
	// failed and the application saw an error.
	TransportFailure Health = "transport-failure"
	// Retransmission: a request was retransmitted (a timeout, a sequence
	// NAK): packets were lost or delayed, and the transport recovered.
	Retransmission Health = "retransmission"
)

// Way is the direction a traffic counter counts.
type Way string

const (
	// NoWay: not a traffic counter.
	NoWay Way = ""
	// Transmit: sent by the port.
	Transmit Way = "transmit"
	// Receive: received by the port.
	Receive Way = "receive"
)

// Counter is one counter file Railyard reads, and how to read it right.
type Counter struct {
	Dir  sysfs.CounterDir
	File string // the kernel's file name ("port_xmit_data")
	// Name is the counter's name in Railyard's metrics and views
	// ("port_transmit_bytes"): one name per row.
	Name string
	Unit Unit
	// Scale converts the raw value to Unit: 4 for the PMA's data
	// counters, which count 4-byte words (octets divided by 4).
	Scale uint64
	// Width is the narrowest width, in bits, the kernel may print the
	// value with: it wraps at 2^Width. The PMA's data and packet counters
	// are 32-bit without extended width (the kernel's pma_group) and
	// 64-bit with it (pma_group_ext, mlx5); mlx5's Q counters are 32-bit,
	// its congestion counters 64-bit.
	Width uint
	Kind  Kind
	// Link marks a counter of the physical link (symbol errors, link
	// downed, ...): read on a PF only; a VF shares its PF's link.
	Link bool
	// Health says what a rise of an error counter means for the port.
	Health Health
	// History marks a link counter whose value above zero since boot is
	// worth telling on its own, even when it does not move (the link went
	// down, or took symbol errors, at some time).
	History bool
	// Flap marks a link fault whose rise means the link went down or its
	// error recovery retrained it (one is enough to degrade the NIC:
	// internal/porthealth); the other link faults are errors the link
	// survived.
	Flap bool
	// Way is the direction of a traffic counter (Summarize adds the
	// transmit and receive rates by it); NoWay for the others.
	Way  Way
	Help string
}

// counters is the table; Counters returns a copy. Sources: the PMA files
// and widths are drivers/infiniband/core/sysfs.c's PORT_PMA_ATTR and
// PORT_PMA_ATTR_EXT; mlx5's hw_counters are drivers/infiniband/hw/mlx5/
// counters.c's (Q counters read as be32, congestion and ext_ppcnt
// counters as 64-bit); rxe's are drivers/infiniband/sw/rxe/
// rxe_hw_counters.c's (atomic64). docs/counters.md lists them.
var counters = [...]Counter{
	// The PMA's PortCounters (ports/N/counters).
	{sysfs.PMACounters, "port_xmit_data", "port_transmit_bytes", Bytes, 4, 32, Traffic, false, NoHealth, false, false, Transmit, "Data transmitted by the port, in bytes (the PMA counts 4-byte words: port_xmit_data x 4)."},
	{sysfs.PMACounters, "port_rcv_data", "port_receive_bytes", Bytes, 4, 32, Traffic, false, NoHealth, false, false, Receive, "Data received by the port, in bytes (the PMA counts 4-byte words: port_rcv_data x 4)."},
	{sysfs.PMACounters, "port_xmit_packets", "port_transmit_packets", Packets, 1, 32, Traffic, false, NoHealth, false, false, Transmit, "Packets transmitted by the port."},
	{sysfs.PMACounters, "port_rcv_packets", "port_receive_packets", Packets, 1, 32, Traffic, false, NoHealth, false, false, Receive, "Packets received by the port."},
	{sysfs.PMACounters, "port_rcv_errors", "port_receive_errors", Packets, 1, 16, Error, false, NoHealth, false, false, NoWay, "Packets with errors received by the port."},
	{sysfs.PMACounters, "port_xmit_discards", "port_transmit_discards", Packets, 1, 16, Error, false, NoHealth, false, false, NoWay, "Outbound packets the port discarded (port down or congestion)."},
	{sysfs.PMACounters, "symbol_error", "port_symbol_errors", Events, 1, 16, Error, true, LinkFault, true, false, NoWay, "Minor link errors (symbol errors) on the physical link."},
	{sysfs.PMACounters, "link_error_recovery", "port_link_error_recoveries", Events, 1, 8, Error, true, LinkFault, false, true, NoWay, "Times the link error recovery process completed successfully."},
	{sysfs.PMACounters, "link_downed", "port_link_downed", Events, 1, 8, Error, true, LinkFault, true, true, NoWay, "Times the link error recovery process failed and the link went down."},
	{sysfs.PMACounters, "port_rcv_remote_physical_errors", "port_receive_remote_physical_errors", Packets, 1, 16, Error, true, NoHealth, false, false, NoWay, "Packets received marked with the EBP delimiter (a physical error upstream)."},
	{sysfs.PMACounters, "local_link_integrity_errors", "port_local_link_integrity_errors", Events, 1, 4, Error, true, LinkFault, false, false, NoWay, "Times the local physical errors exceeded their threshold."},
	{sysfs.PMACounters, "excessive_buffer_overrun_errors", "port_excessive_buffer_overrun_errors", Events, 1, 4, Error, true, LinkFault, false, false, NoWay, "Times consecutive flow control update periods had buffer overruns."},
	{sysfs.PMACounters, "port_xmit_wait", "port_transmit_wait", Ticks, 1, 32, Congestion, true, NoHealth, false, false, NoWay, "Ticks the port had data to transmit and none was sent (no credits: congestion)."},

	// mlx5's hw_counters: Q counters (32-bit) and congestion counters.
	{sysfs.HWCounters, "out_of_buffer", "out_of_buffer", Packets, 1, 32, Error, false, NoHealth, false, false, NoWay, "Packets dropped for lack of a posted receive WQE (mlx5)."},
	{sysfs.HWCounters, "out_of_sequence", "out_of_sequence", Packets, 1, 32, Error, false, Retransmission, false, false, NoWay, "Out-of-sequence packets received (mlx5)."},
	{sysfs.HWCounters, "packet_seq_err", "packet_sequence_errors", Events, 1, 32, Error, false, Retransmission, false, false, NoWay, "NAK sequence errors received by requesters, each followed by a retransmission (mlx5)."},
	{sysfs.HWCounters, "local_ack_timeout_err", "local_ack_timeouts", Events, 1, 32, Error, false, Retransmission, false, false, NoWay, "ACK timeouts of requesters, each followed by a retransmission (mlx5)."},
	{sysfs.HWCounters, "implied_nak_seq_err", "implied_nak_sequence_errors", Events, 1, 32, Error, false, Retransmission, false, false, NoWay, "Implied NAK sequence errors of requesters, each followed by a retransmission (mlx5)."},
	{sysfs.HWCounters, "rnr_nak_retry_err", "rnr_nak_retries", Events, 1, 32, Error, false, NoHealth, false, false, NoWay, "RNR NAKs received by requesters (the responder had no receive buffer) (mlx5)."},
	{sysfs.HWCounters, "req_transport_retries_exceeded", "transport_retries_exceeded", Events, 1, 32, Error, false, TransportFailure, false, false, NoWay, "Requests that exceeded their transport retry count: the QP failed (mlx5)."},
	{sysfs.HWCounters, "roce_adp_retrans", "adaptive_retransmissions", Events, 1, 32, Error, false, Retransmission, false, false, NoWay, "RoCE adaptive retransmissions (mlx5)."},
	{sysfs.HWCounters, "roce_slow_restart", "slow_restarts", Events, 1, 32, Congestion, false, NoHealth, false, false, NoWay, "RoCE slow restarts after retransmissions (mlx5)."},
	{sysfs.HWCounters, "duplicate_request", "duplicate_requests", Packets, 1, 32, Error, false, NoHealth, false, false, NoWay, "Duplicate requests received by responders (mlx5: 32-bit; rxe)."},
	{sysfs.HWCounters, "rx_icrc_encapsulated", "icrc_errors", Packets, 1, 64, Error, false, NoHealth, false, false, NoWay, "RoCE packets received with an ICRC error (mlx5)."},
	{sysfs.HWCounters, "np_ecn_marked_roce_packets", "ecn_marked_packets", Packets, 1, 64, Congestion, false, NoHealth, false, false, NoWay, "ECN-marked RoCE packets received: the notification point saw congestion (mlx5)."},
	{sysfs.HWCounters, "np_cnp_sent", "cnp_sent", Packets, 1, 64, Congestion, false, NoHealth, false, false, NoWay, "Congestion notification packets sent by the notification point (mlx5)."},
	{sysfs.HWCounters, "rp_cnp_handled", "cnp_handled", Packets, 1, 64, Congestion, false, NoHealth, false, false, NoWay, "Congestion notification packets handled by the reaction point, which slowed down (mlx5)."},
	{sysfs.HWCounters, "rp_cnp_ignored", "cnp_ignored", Packets, 1, 64, Congestion, false, NoHealth, false, false, NoWay, "Congestion notification packets the reaction point ignored (mlx5)."},

	// rxe's hw_counters (64-bit).
	{sysfs.HWCounters, "sent_pkts", "sent_packets", Packets, 1, 64, Traffic, false, NoHealth, false, false, Transmit, "Packets sent (rxe)."},
	{sysfs.HWCounters, "rcvd_pkts", "received_packets", Packets, 1, 64, Traffic, false, NoHealth, false, false, Receive, "Packets received (rxe)."},
	{sysfs.HWCounters, "rcvd_seq_err", "received_sequence_errors", Events, 1, 64, Error, false, Retransmission, false, false, NoWay, "NAK sequence errors received (rxe)."},
	{sysfs.HWCounters, "out_of_seq_request", "out_of_sequence_requests", Packets, 1, 64, Error, false, Retransmission, false, false, NoWay, "Out-of-sequence requests received (rxe)."},
	{sysfs.HWCounters, "retry_exceeded_err", "retries_exceeded", Events, 1, 64, Error, false, TransportFailure, false, false, NoWay, "Requests that exceeded their retry count (rxe)."},
	{sysfs.HWCounters, "completer_retry_err", "completer_retries", Events, 1, 64, Error, false, Retransmission, false, false, NoWay, "Retries started by the completer (rxe)."},
	{sysfs.HWCounters, "send_err", "send_errors", Events, 1, 64, Error, false, NoHealth, false, false, NoWay, "Packets the device failed to send (rxe)."},
	{sysfs.HWCounters, "link_downed", "link_downed", Events, 1, 64, Error, true, LinkFault, true, true, NoWay, "Times the port's netdev went down (rxe)."},
}

// numCounters is the table's length.
const numCounters = len(counters)

// Counters returns the table, in its order (the index Sample, Totals
// and Rates use).
func Counters() []Counter {
	out := make([]Counter, numCounters)
	copy(out, counters[:])
	return out
}
