package bench

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// osuBWOutput is osu_bw as OMB 5.x prints it, peaking at the published
// 12.06 GB/s (12060 MB/s, 10^6 bytes) on 100G EDR InfiniBand.
const osuBWOutput = `# OSU MPI Bandwidth Test v5.6.2
# Size      Bandwidth (MB/s)
1                       3.51
1024                 3012.44
65536               11873.20
4194304             12060.00
`

// osuLatOutput is osu_latency with the published 1.77 us for small
// messages.
const osuLatOutput = `# OSU MPI Latency Test v5.6.2
# Size          Latency (us)
0                       1.77
1                       1.78
8                       1.79
1024                    3.02
`

func TestOSUBandwidthEDRSeed(t *testing.T) {
	t.Parallel()
	r := Parse([]byte(osuBWOutput))
	if r.Tool != "osu_bw" || r.Kind != KindOSUBW {
		t.Fatalf("parsed %s %s", r.Tool, r.Kind)
	}
	v := findVerdict(t, Judge(JudgeInput{Results: []Labelled{{Scenario: "rdma", Result: r}}, LineRateGbps: 100}), CheckLineRate, "rdma")
	want := Verdict{Check: CheckLineRate, Scenario: "rdma", Tool: "osu_bw", Status: StatusPass, Measured: 96.48, Target: 90, Unit: "Gb/s",
		Reason: "peak 96.48 Gb/s (12.06 GB/s) = 96.5% of 100 Gb/s line rate; pass at 90%"}
	if d := cmp.Diff(want, got(v)); d != "" {
		t.Errorf("verdict (-want +got):\n%s", d)
	}
	// Half the rate: a real failure.
	slow := Parse([]byte(strings.NewReplacer("12060.00", "6030.00", "11873.20", "5936.60").Replace(osuBWOutput)))
	if v := findVerdict(t, Judge(JudgeInput{Results: []Labelled{{Scenario: "rdma", Result: slow}}, LineRateGbps: 100}), CheckLineRate, "rdma"); v.Status != StatusFail {
		t.Errorf("half the line rate: %+v", v)
	}
}

// got rounds a verdict's numbers to 1e-9 so that 12060 x 0.008 compares.
func got(v Verdict) Verdict {
	round := func(x float64) float64 { return float64(int64(x*1e9+0.5)) / 1e9 }
	v.Measured, v.Target = round(v.Measured), round(v.Target)
	return v
}

func TestOSULatencySeed(t *testing.T) {
	t.Parallel()
	r := Parse([]byte(osuLatOutput))
	if r.Tool != "osu_latency" || r.Kind != KindOSULat {
		t.Fatalf("parsed %s %s", r.Tool, r.Kind)
	}
	for _, tc := range []struct {
		name     string
		linkType string
		gbps     float64
		factor   float64
		status   Status
		reason   string
	}{
		{"EDR InfiniBand", "IB", 100, 0, StatusPass, "1.77 us = 1.6x the 1.1 us expected of InfiniBand at 100 Gb/s; pass up to 2.0x (2.20 us)"},
		{"RoCE 100G", "Ethernet", 100, 0, StatusPass, "1.0x the 1.8 us expected of RoCE"},
		{"strict factor", "IB", 100, 1.2, StatusFail, "far above the fabric"},
		{"link type unknown", "", 100, 0, StatusSkip, "give the link type"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			in := JudgeInput{Results: []Labelled{{Scenario: "rdma", Result: r}}, LineRateGbps: tc.gbps, LinkType: tc.linkType,
				Thresholds: Thresholds{MaxLatencyFactor: tc.factor}}
			v := findVerdict(t, Judge(in), CheckOSULatency, "rdma")
			if v.Status != tc.status || !strings.Contains(v.Reason, tc.reason) || v.Measured != 1.77 {
				t.Errorf("verdict = %+v, want %s with %q", v, tc.status, tc.reason)
			}
		})
	}
}

func TestOSUCollectiveLatencyNotJudged(t *testing.T) {
	t.Parallel()
	r := Parse(loadVector(t, "osu_reduce_full_cuda_v7.3_collective_format__open-mpi-ompi-pr-12318.txt"))
	for _, v := range Judge(JudgeInput{Results: []Labelled{{Scenario: "rdma", Result: r}}, LinkType: "IB", LineRateGbps: 100}) {
		if v.Status == StatusFail || v.Status == StatusPass {
			t.Errorf("a collective's latency judged: %+v", v)
		}
	}
}
