package rdmacounter

import (
	"math"
	"math/bits"
)

// Event says how a counter got from one raw value to the next.
type Event int

const (
	// Counted: the value went up (or stayed).
	Counted Event = iota
	// Wrapped: the value went down from the upper half of its width's
	// range to the lower half: it passed 2^Width once.
	Wrapped
	// Reset: the value went down otherwise (a device reset or driver
	// reload zeroed it): what it counted since is its new value.
	Reset
)

func (e Event) String() string {
	switch e {
	case Counted:
		return "counted"
	case Wrapped:
		return "wrapped"
	case Reset:
		return "reset"
	}
	return "unknown"
}

// RawDelta returns how much counter c counted from raw value prev to cur,
// in the kernel's unit (unscaled), and how. A value that goes down wrapped
// when prev was in the upper half of c's range and cur is in the lower
// half (one wrap between two readings: a reading at least every half
// wrap period is assumed); any other decrease is a reset, and the counter
// counted cur since. Ambiguity: a reset from the upper half is counted as
// a wrap, over-counting by at most 2^Width - prev.
func (c Counter) RawDelta(prev, cur uint64) (uint64, Event) {
	if cur >= prev {
		return cur - prev, Counted
	}
	if c.Width >= 64 {
		if prev >= 1<<63 && cur < 1<<63 {
			return cur + (math.MaxUint64 - prev) + 1, Wrapped
		}
		return cur, Reset
	}
	top := uint64(1) << c.Width
	half := top >> 1
	if prev >= half && prev < top && cur < half {
		return cur + (top - prev), Wrapped
	}
	return cur, Reset
}

// Scaled converts a raw amount of counter c to its Unit (words to bytes),
// saturating at the largest uint64.
func (c Counter) Scaled(raw uint64) uint64 {
	scale := max(c.Scale, 1)
	hi, lo := bits.Mul64(raw, scale)
	if hi != 0 {
		return math.MaxUint64
	}
	return lo
}
