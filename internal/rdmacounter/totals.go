package rdmacounter

import "math"

// Totals turns one port's successive samples into monotonic counters in
// the table's units: the first sample's values (scaled), plus every
// delta since (wraps and resets accounted for by RawDelta). Exported
// counters built on it never go down while the process lives, so a
// 32-bit counter's wrap does not read as a reset to Prometheus's rate().
// A counter missing from a sample keeps its total; one that comes back is
// counted from its previous raw value. The zero value is ready to use; it
// is not safe for concurrent use.
type Totals struct {
	seen   [numCounters]bool
	last   [numCounters]uint64
	total  [numCounters]uint64
	events [numCounters]Event
}

// Add folds a sample in.
func (t *Totals) Add(s *Sample) {
	for i := range numCounters {
		if !s.has[i] {
			continue
		}
		c := &counters[i]
		raw := s.values[i]
		if !t.seen[i] {
			t.seen[i], t.last[i], t.total[i], t.events[i] = true, raw, c.Scaled(raw), Counted
			continue
		}
		d, ev := c.RawDelta(t.last[i], raw)
		t.last[i], t.events[i] = raw, ev
		t.total[i] = addSat(t.total[i], c.Scaled(d))
	}
}

// Total returns counter i's total in its unit, and whether it was ever
// sampled.
func (t *Totals) Total(i int) (uint64, bool) {
	if i < 0 || i >= numCounters {
		return 0, false
	}
	return t.total[i], t.seen[i]
}

// LastEvent returns how counter i moved at the last sample that had it.
func (t *Totals) LastEvent(i int) Event {
	if i < 0 || i >= numCounters {
		return Counted
	}
	return t.events[i]
}

func addSat(a, b uint64) uint64 {
	if a > math.MaxUint64-b {
		return math.MaxUint64
	}
	return a + b
}

// Rate is one counter's rate between two samples.
type Rate struct {
	Index     int     // into Counters
	PerSecond float64 // in the counter's Unit per second
	Event     Event
}

// Rates returns the rate of every counter both samples have, in table
// order; none when cur is not later than prev.
func Rates(prev, cur *Sample) []Rate {
	dt := cur.Time.Sub(prev.Time)
	if dt <= 0 {
		return nil
	}
	var out []Rate
	for i := range numCounters {
		if !prev.has[i] || !cur.has[i] {
			continue
		}
		c := &counters[i]
		d, ev := c.RawDelta(prev.values[i], cur.values[i])
		out = append(out, Rate{Index: i, PerSecond: float64(c.Scaled(d)) / dt.Seconds(), Event: ev})
	}
	return out
}
