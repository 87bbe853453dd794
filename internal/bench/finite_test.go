package bench

import (
	"encoding/json"
	"math"
	"testing"
)

// "inf", "nan" and overflowing cells are no measurement.
func TestNonFiniteCellsAreNoMeasurement(t *testing.T) {
	r := ParsePerftest([]byte(" #bytes #iterations BW peak[Gb/sec] BW average[Gb/sec] MsgRate[Mpps]\n" +
		" 65536 1000 inf 91.2 0.17\n 65536 1000 9.2 -Inf 0.17\n 65536 1000 9.2 1e400 0.17\n 1048576 1000 92.1 91.8 0.011\n"))
	if len(r.PerftestBW) != 1 || r.PerftestBW[0].Bytes != 1048576 {
		t.Errorf("rows = %+v, want only the finite one", r.PerftestBW)
	}
	if _, err := json.Marshal(r); err != nil {
		t.Error(err)
	}
}

// Judge takes non-finite settings as unset, and a ratio that overflows
// is still a number JSON can carry.
func TestJudgeKeepsVerdictsFinite(t *testing.T) {
	bw := Result{Tool: "ib_write_bw", OK: true, Kind: KindPerftestBW, PerftestBW: []PerftestBWRow{{Bytes: 1 << 20, BWAvgGbps: 1e308}}}
	tcp := Result{Tool: "iperf3", OK: true, Kind: KindPerftestBW, PerftestBW: []PerftestBWRow{{Bytes: 1 << 20, BWAvgGbps: 1e-300}}}
	vs := Judge(JudgeInput{
		Results:      []Labelled{{Scenario: "rdma", Result: bw}, {Scenario: "tcp", Result: tcp}},
		LineRateGbps: math.NaN(),
		Thresholds:   Thresholds{LineRateFraction: math.NaN(), MinSpeedup: math.Inf(1), NCCLFraction: 0.9, PodTolerance: math.NaN()},
	})
	if _, err := json.Marshal(vs); err != nil {
		t.Fatalf("verdicts do not marshal: %v", err)
	}
	var speedup *Verdict
	for i, v := range vs {
		if v.Check == CheckLineRate && v.Status != StatusSkip {
			t.Errorf("line rate NaN judged: %+v", v)
		}
		if v.Check == CheckRDMAvsTCP {
			speedup = &vs[i]
		}
	}
	if speedup == nil || speedup.Measured != math.MaxFloat64 || speedup.Target != 1.5 || speedup.Status != StatusPass {
		t.Errorf("speed-up verdict %+v, want measured MaxFloat64 against the default 1.5", speedup)
	}
}
