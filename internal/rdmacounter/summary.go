package rdmacounter

// Summary is a port's rates in a few numbers, for a live view: traffic
// each way, and how fast its error and congestion counters climb.
type Summary struct {
	// TxBytes and RxBytes are bytes per second (the PMA's data counters;
	// HasBytes is false on a device without them, such as rxe).
	TxBytes, RxBytes float64
	HasBytes         bool
	// TxPackets and RxPackets are packets per second: the PMA's packet
	// counters, or rxe's sent_pkts and rcvd_pkts.
	TxPackets, RxPackets float64
	// Errors is the sum of the error counters' rates (packets and events
	// per second); Congestion the sum of the congestion counters' rates in
	// packets and events (CNPs, ECN marks, slow restarts), without the
	// PMA's transmit wait, which counts ticks.
	Errors, Congestion float64
	// Reset is set when a counter went down other than by a wrap.
	Reset bool
}

// Summarize adds up rates (of one port, from Rates).
func Summarize(rates []Rate) Summary {
	var s Summary
	for _, r := range rates {
		c := &counters[r.Index]
		if r.Event == Reset {
			s.Reset = true
		}
		switch c.Name {
		case "port_transmit_bytes":
			s.TxBytes, s.HasBytes = r.PerSecond, true
		case "port_receive_bytes":
			s.RxBytes, s.HasBytes = r.PerSecond, true
		case "port_transmit_packets", "sent_packets":
			s.TxPackets += r.PerSecond
		case "port_receive_packets", "received_packets":
			s.RxPackets += r.PerSecond
		}
		switch {
		case c.Kind == Error:
			s.Errors += r.PerSecond
		case c.Kind == Congestion && c.Unit != Ticks:
			s.Congestion += r.PerSecond
		}
	}
	return s
}

// Add adds o's rates to s (a pod's ports together).
func (s Summary) Add(o Summary) Summary {
	return Summary{
		TxBytes: s.TxBytes + o.TxBytes, RxBytes: s.RxBytes + o.RxBytes, HasBytes: s.HasBytes || o.HasBytes,
		TxPackets: s.TxPackets + o.TxPackets, RxPackets: s.RxPackets + o.RxPackets,
		Errors: s.Errors + o.Errors, Congestion: s.Congestion + o.Congestion, Reset: s.Reset || o.Reset,
	}
}
