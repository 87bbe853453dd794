package rdmacounter

// Summary is a port's rates in a few numbers, for a live view: traffic
// each way, and how fast its error and congestion counters climb. A rate
// the port has no counter for (rxe has no data counters, no congestion
// counters), or whose counters could not be read, is not known: Has says
// which are, and a view shows the others as unknown, never as 0.
type Summary struct {
	// TxBytes and RxBytes are bytes per second (the PMA's data counters).
	TxBytes, RxBytes float64
	// TxPackets and RxPackets are packets per second: the PMA's packet
	// counters, or rxe's sent_pkts and rcvd_pkts.
	TxPackets, RxPackets float64
	// Errors is the sum of the error counters' rates (packets and events
	// per second); Congestion the sum of the congestion counters' rates in
	// packets and events (CNPs, ECN marks, slow restarts), without the
	// PMA's transmit wait, which counts ticks.
	Errors, Congestion float64
	// Has says which of the rates above have a value.
	Has Known
	// Reset is set when a counter went down other than by a wrap.
	Reset bool
}

// Known says which of a Summary's rates have a value: at least one of
// the counters it adds up was in both readings.
type Known struct {
	TxBytes, RxBytes, TxPackets, RxPackets, Errors, Congestion bool
}

// Summarize adds up rates (of one port, from Rates).
func Summarize(rates []Rate) Summary {
	var s Summary
	for _, r := range rates {
		c := &counters[r.Index]
		if r.Event == Reset {
			s.Reset = true
		}
		if c.Kind == Traffic {
			switch {
			case c.Unit == Bytes && c.Way == Transmit:
				s.TxBytes, s.Has.TxBytes = r.PerSecond, true
			case c.Unit == Bytes && c.Way == Receive:
				s.RxBytes, s.Has.RxBytes = r.PerSecond, true
			case c.Unit == Packets && c.Way == Transmit:
				s.TxPackets += r.PerSecond
				s.Has.TxPackets = true
			case c.Unit == Packets && c.Way == Receive:
				s.RxPackets += r.PerSecond
				s.Has.RxPackets = true
			}
		}
		switch {
		case c.Kind == Error:
			s.Errors += r.PerSecond
			s.Has.Errors = true
		case c.Kind == Congestion && c.Unit != Ticks:
			s.Congestion += r.PerSecond
			s.Has.Congestion = true
		}
	}
	return s
}

// Add adds o's rates to s (a pod's ports together): a rate is known when
// either has it.
func (s Summary) Add(o Summary) Summary {
	return Summary{
		TxBytes: s.TxBytes + o.TxBytes, RxBytes: s.RxBytes + o.RxBytes,
		TxPackets: s.TxPackets + o.TxPackets, RxPackets: s.RxPackets + o.RxPackets,
		Errors: s.Errors + o.Errors, Congestion: s.Congestion + o.Congestion,
		Has: Known{
			TxBytes: s.Has.TxBytes || o.Has.TxBytes, RxBytes: s.Has.RxBytes || o.Has.RxBytes,
			TxPackets: s.Has.TxPackets || o.Has.TxPackets, RxPackets: s.Has.RxPackets || o.Has.RxPackets,
			Errors: s.Has.Errors || o.Has.Errors, Congestion: s.Has.Congestion || o.Has.Congestion,
		},
		Reset: s.Reset || o.Reset,
	}
}
