package bench

import (
	"fmt"
	"strings"
)

// OSU checks.
const (
	CheckOSULatency       = "osu-latency"
	defaultMaxLatencyFact = 2.0
)

// ExpectedLatency is the small-message one-way latency (osu_latency, 0 to
// 8 bytes, host memory, back to back or through one switch) a fabric is
// expected to reach: the table osu_latency is judged against.
type ExpectedLatency struct {
	LinkType string  // "IB" | "Ethernet"
	MinGbps  float64 // the row applies from this port rate on
	Us       float64
	Source   string
}

// ExpectedLatencies is one row per link type and rate class, fastest
// last; docs/bench.md prints it with its basis. The ranges in Source are
// the order of magnitude those publications report, recalled rather than
// copied from a retrieved page: the pass mark is a factor over them.
var ExpectedLatencies = []ExpectedLatency{
	{"IB", 0, 1.5, "QDR/FDR: MVAPICH2 osu_latency on ConnectX-3 (OSU's published point-to-point results) about 1.1-1.5 us"},
	{"IB", 100, 1.1, "EDR: MVAPICH2 osu_latency on ConnectX-4/5 EDR (OSU's published point-to-point results) about 1.0-1.1 us"},
	{"IB", 200, 1.0, "HDR/NDR: osu_latency on ConnectX-6/7 (OSU's and NVIDIA's published results) about 0.9-1.0 us"},
	{"Ethernet", 0, 2.5, "RoCE 10-40G: perftest/osu_latency on ConnectX-3/4 Lx about 1.5-2.5 us (switch and adapter latency, no kernel)"},
	{"Ethernet", 100, 1.8, "RoCE 100G and up: osu_latency on ConnectX-5/6 through one switch about 1.5-1.8 us"},
}

// expectedLatency picks the row of a link type for a port rate (0 when
// the link type is unknown).
func expectedLatency(linkType string, gbps float64) (ExpectedLatency, bool) {
	lt := normLinkType(linkType)
	var best ExpectedLatency
	found := false
	for _, e := range ExpectedLatencies {
		if e.LinkType == lt && gbps >= e.MinGbps && (!found || e.MinGbps >= best.MinGbps) {
			best, found = e, true
		}
	}
	return best, found
}

func normLinkType(s string) string {
	switch {
	case strings.EqualFold(s, "IB"), strings.EqualFold(s, "InfiniBand"):
		return "IB"
	case strings.EqualFold(s, "Ethernet"), strings.EqualFold(s, "RoCE"):
		return "Ethernet"
	}
	return ""
}

// osuBWVerdict judges osu_bw's (osu_bibw's, x2) peak bandwidth against the
// line rate, as perftest's large-message bandwidth is.
func osuBWVerdict(in JudgeInput, l Labelled) Verdict {
	r := l.Result
	v := Verdict{Check: CheckLineRate, Scenario: l.Scenario, Tool: r.Tool, Unit: "Gb/s"}
	bw, ok := r.Summary[SumMaxBWGbps]
	if !ok {
		v.Status, v.Reason = StatusSkip, "no bandwidth rows"
		return v
	}
	v.Measured = bw
	what := fmt.Sprintf("peak %s (%.2f GB/s)", gbs(bw), bw/8)
	if r.Tool != "osu_bw" && r.Tool != "osu_bibw" {
		v.Status, v.Reason = StatusInfo, what+" by "+r.Tool+": only osu_bw and osu_bibw are judged against the line rate"
		return v
	}
	return judgeLineRate(in, v, peakBW{What: what, Bidirectional: r.Tool == "osu_bibw"})
}

// osuLatVerdict judges osu_latency's lowest average latency (its smallest
// messages) against the fabric's expected small-message latency times the
// profile's factor. Collective latencies (osu_allreduce...) are not judged.
func osuLatVerdict(in JudgeInput, l Labelled) Verdict {
	r := l.Result
	v := Verdict{Check: CheckOSULatency, Scenario: l.Scenario, Tool: r.Tool, Unit: "us"}
	lat, ok := r.Summary[SumMinLatAvgUs]
	switch {
	case !ok:
		v.Status, v.Reason = StatusSkip, "no latency rows"
		return v
	case r.Tool != "osu_latency":
		v.Measured = lat
		v.Status, v.Reason = StatusInfo, fmt.Sprintf("lowest average latency %.2f us by %s: only point-to-point osu_latency is judged", lat, r.Tool)
		return v
	}
	v.Measured = lat
	e, ok := expectedLatency(in.LinkType, in.LineRateGbps)
	if !ok {
		v.Status, v.Reason = StatusSkip, fmt.Sprintf("small-message latency %.2f us; give the link type (--profile, --sysfs or --machine) to judge it", lat)
		return v
	}
	f := in.Thresholds.MaxLatencyFactor
	v.Target = e.Us * f
	v.Reason = fmt.Sprintf("small-message latency %.2f us = %.1fx the %.1f us expected of %s%s; pass up to %.1fx (%.2f us)",
		lat, lat/e.Us, e.Us, linkName(e.LinkType), rateName(in.LineRateGbps), f, v.Target)
	switch {
	case l.Scenario == in.Roles.TCP:
		v.Status = StatusInfo
		v.Reason += "; TCP scenario, not expected to reach RDMA latency"
	case lat <= v.Target:
		v.Status = StatusPass
	default:
		v.Status = StatusFail
		v.Reason += "; far above the fabric: is the run on the RDMA NIC (UCX_NET_DEVICES), CPU frequency scaling off, the ranks on two nodes?"
	}
	return v
}

func linkName(lt string) string {
	if lt == "IB" {
		return "InfiniBand"
	}
	return "RoCE"
}

func rateName(gbps float64) string {
	if gbps <= 0 {
		return ""
	}
	return fmt.Sprintf(" at %g Gb/s", gbps)
}

// gbs prints a bandwidth in Gb/s with two decimals.
func gbs(v float64) string { return fmt.Sprintf("%.2f Gb/s", v) }
