package benchprobe

import "time"

// Report is the client's output: a subset of iperf3 --json with the same
// field names and units (bytes, seconds, bits per second), so the iperf3
// parser of internal/bench reads it. start.version names the probe, not
// iperf3.
type Report struct {
	Start     Start      `json:"start"`
	Intervals []Interval `json:"intervals"`
	End       End        `json:"end"`
	// Error is set when the test failed (as iperf3's top-level "error").
	Error string `json:"error,omitempty"`
}

// Start describes the test.
type Start struct {
	// Version is "railyard-tcp-probe/1 (railyard <version>)".
	Version   string      `json:"version"`
	Timestamp Timestamp   `json:"timestamp"`
	Connected []Connected `json:"connected"`
	TestStart TestStart   `json:"test_start"`
}

// Timestamp is when the test started.
type Timestamp struct {
	Time     string `json:"time"` // RFC 3339, UTC
	TimeSecs int64  `json:"timesecs"`
}

// Connected is one data stream's addresses.
type Connected struct {
	LocalHost  string `json:"local_host"`
	LocalPort  int    `json:"local_port"`
	RemoteHost string `json:"remote_host"`
	RemotePort int    `json:"remote_port"`
}

// TestStart holds the test's parameters.
type TestStart struct {
	Protocol   string  `json:"protocol"` // always "TCP"
	NumStreams int     `json:"num_streams"`
	BlkSize    int     `json:"blksize"`
	Duration   float64 `json:"duration"`
	Reverse    int     `json:"reverse"` // always 0: the client sends
}

// Interval is one sampling interval; Sum is over every stream.
type Interval struct {
	Sum Sum `json:"sum"`
}

// Sum is an amount of data over a span of the test (seconds from its
// start).
type Sum struct {
	Start         float64 `json:"start"`
	End           float64 `json:"end"`
	Seconds       float64 `json:"seconds"`
	Bytes         int64   `json:"bytes"`
	BitsPerSecond float64 `json:"bits_per_second"`
	Omitted       bool    `json:"omitted"`
	Sender        bool    `json:"sender"`
}

// End holds the totals: what the client sent and what the server
// received, each over its own measured time.
type End struct {
	SumSent     *Sum `json:"sum_sent,omitempty"`
	SumReceived *Sum `json:"sum_received,omitempty"`
}

func newSum(start, end float64, bytes int64, sender bool) Sum {
	s := Sum{Start: start, End: end, Seconds: end - start, Bytes: bytes, Sender: sender}
	if s.Seconds > 0 {
		s.BitsPerSecond = float64(bytes) * 8 / s.Seconds
	}
	return s
}

func timestamp(t time.Time) Timestamp {
	return Timestamp{Time: t.UTC().Format(time.RFC3339), TimeSecs: t.Unix()}
}
