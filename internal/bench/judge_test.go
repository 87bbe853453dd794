package bench

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func findVerdict(t *testing.T, vs []Verdict, check, scenario string) Verdict {
	t.Helper()
	for _, v := range vs {
		if v.Check == check && v.Scenario == scenario {
			return v
		}
	}
	t.Fatalf("no %s verdict for %s in %+v", check, scenario, vs)
	return Verdict{}
}

const (
	roceVector    = "perftest_ib_write_bw_all_gbits_roce_k8s_pods__nvidia_cloud-native-docs.txt"
	ncclIBVector  = "nccl-tests_all_reduce_perf_2node_16gpu_k8s_mpijob_ib_sriov__azure_aks-rdma-infiniband.txt"
	ncclTCPVector = "nccl-tests_all_reduce_perf_2node_16gpu_k8s_mpijob_ipoib_tcp__azure_aks-rdma-infiniband.txt"
)

func TestLineRateVerdictRoCEMTU1024(t *testing.T) {
	r := Parse(loadVector(t, roceVector))
	vs := Judge(JudgeInput{Results: []Labelled{{Scenario: "rdma", Result: r}}, LineRateGbps: 100})
	v := findVerdict(t, vs, CheckLineRate, "rdma")
	if v.Status != StatusPass || !near(v.Measured, 92.44) || !near(v.Target, 90) {
		t.Errorf("verdict = %+v", v)
	}
	for _, want := range []string{"92.44 Gb/s at 256 KiB", "92.4% of 100 Gb/s", "RoCE at MTU 1024 cannot exceed about 92.6%"} {
		if !strings.Contains(v.Reason, want) {
			t.Errorf("reason %q lacks %q", v.Reason, want)
		}
	}
	strict := Judge(JudgeInput{Results: []Labelled{{Scenario: "rdma", Result: r}}, LineRateGbps: 100,
		Thresholds: Thresholds{LineRateFraction: 0.95}})
	if v := findVerdict(t, strict, CheckLineRate, "rdma"); v.Status != StatusFail {
		t.Errorf("95%% threshold: %+v", v)
	}
	wrongRate := Judge(JudgeInput{Results: []Labelled{{Scenario: "rdma", Result: r}}, LineRateGbps: 50})
	if v := findVerdict(t, wrongRate, CheckLineRate, "rdma"); v.Status != StatusWarn {
		t.Errorf("line rate below measured: %+v", v)
	}
}

func TestMaxGoodputFraction(t *testing.T) {
	for _, tc := range []struct {
		link string
		mtu  int
		want float64
	}{{"Ethernet", 1024, 0.9259}, {"Ethernet", 4096, 0.9804}, {"IB", 4096, 0.9937}, {"", 4096, 0}, {"Ethernet", 0, 0}} {
		if got := MaxGoodputFraction(tc.link, tc.mtu); got < tc.want-5e-5 || got > tc.want+5e-5 {
			t.Errorf("%s/%d = %.5f, want %.4f", tc.link, tc.mtu, got, tc.want)
		}
	}
}

func TestPodVsBareMetal(t *testing.T) {
	mk := func(mib string) Result {
		return ParsePerftest([]byte(mibHeader + " 65536 5000 " + mib + " " + mib + " 0.07\n"))
	}
	vs := Judge(JudgeInput{Results: []Labelled{{Scenario: "pod", Result: mk("4362.49")}, {Scenario: "bare-metal", Result: mk("4363.17")}}})
	v := findVerdict(t, vs, CheckPodBareMetal, "pod")
	if v.Status != StatusPass || !strings.Contains(v.Reason, "0.02% below bare metal") {
		t.Errorf("issue example: %+v", v)
	}
	vs = Judge(JudgeInput{Results: []Labelled{{Scenario: "pod", Result: mk("4200.00")}, {Scenario: "bare-metal", Result: mk("4363.17")}}})
	if v := findVerdict(t, vs, CheckPodBareMetal, "pod"); v.Status != StatusFail || !strings.Contains(v.Reason, "3.74% below") {
		t.Errorf("4%% slower pod: %+v", v)
	}
	// Latency: lower is better.
	lat := func(us string) Result {
		return ParsePerftest([]byte(" #bytes #iterations t_min[usec] t_max[usec] t_typical[usec]\n 2 1000 1.0 2.0 " + us + "\n"))
	}
	vs = Judge(JudgeInput{Results: []Labelled{{Scenario: "pod", Result: lat("1.50")}, {Scenario: "bare-metal", Result: lat("1.40")}}})
	if v := findVerdict(t, vs, CheckPodBareMetal, "pod"); v.Status != StatusFail || !strings.Contains(v.Reason, "above bare metal") {
		t.Errorf("slower latency: %+v", v)
	}
	// Bare metal measured latency only: nothing of the same kind.
	vs = Judge(JudgeInput{Results: []Labelled{{Scenario: "pod", Result: mk("4362.49")}, {Scenario: "bare-metal", Result: lat("1.40")}}})
	if v := findVerdict(t, vs, CheckPodBareMetal, "pod"); v.Status != StatusSkip {
		t.Errorf("bare metal without bandwidth: %+v", v)
	}
	// No bare-metal scenario at all: no comparison verdict.
	vs = Judge(JudgeInput{Results: []Labelled{{Scenario: "pod", Result: mk("4362.49")}}})
	for _, v := range vs {
		if v.Check == CheckPodBareMetal {
			t.Errorf("comparison without a bare-metal scenario: %+v", v)
		}
	}
}

func TestRDMAvsTCPAndNCCLBusBW(t *testing.T) {
	ib, tcp := Parse(loadVector(t, ncclIBVector)), Parse(loadVector(t, ncclTCPVector))
	in := JudgeInput{Results: []Labelled{{Scenario: "rdma", Result: ib}, {Scenario: "tcp", Result: tcp}}, LineRateGbps: 200, NICs: 8}
	vs := Judge(in)
	sp := findVerdict(t, vs, CheckRDMAvsTCP, "rdma")
	if sp.Status != StatusPass || !near(sp.Measured, 187.22/3.17) || !strings.Contains(sp.Reason, "59.1x speed-up") {
		t.Errorf("speed-up: %+v", sp)
	}
	bus := findVerdict(t, vs, CheckNCCLBusBW, "rdma")
	if bus.Status != StatusPass || !near(bus.Target, 180) || !strings.Contains(bus.Reason, "93.6% of 8 NICs x 200 Gb/s = 200.0 GB/s") {
		t.Errorf("busbw: %+v", bus)
	}
	if v := findVerdict(t, vs, CheckNCCLBusBW, "tcp"); v.Status != StatusInfo {
		t.Errorf("tcp busbw must be info: %+v", v)
	}
	// Half the NIC rate: measured exceeds the network; node count unknown,
	// so the 2-node tree caveat applies.
	in.LineRateGbps = 100
	over := findVerdict(t, Judge(in), CheckNCCLBusBW, "rdma")
	if over.Status != StatusWarn || !strings.Contains(over.Reason, "NCCL_ALGO=Ring") {
		t.Errorf("over line rate: %+v", over)
	}
	// Demand 100x.
	in.Thresholds = Thresholds{MinSpeedup: 100}
	if v := findVerdict(t, Judge(in), CheckRDMAvsTCP, "rdma"); v.Status != StatusFail {
		t.Errorf("100x demanded: %+v", v)
	}
}

func TestFailedRunVerdict(t *testing.T) {
	r := Parse(loadVector(t, "perftest_error_couldnt_connect_socket__perftest-pr-228.txt"))
	vs := Judge(JudgeInput{Results: []Labelled{{Scenario: "rdma", Result: r}}, LineRateGbps: 100})
	if len(vs) != 1 || vs[0].Check != CheckRun || vs[0].Status != StatusFail || !strings.Contains(vs[0].Reason, "Couldn't connect") {
		t.Errorf("verdicts = %+v", vs)
	}
	if !Failed(vs) {
		t.Error("Failed() = false")
	}
}

func TestFormatBytes(t *testing.T) {
	for n, want := range map[int64]string{8: "8 B", 65536: "64 KiB", 8388608: "8 MiB", 1500: "1500 B", 8589934592: "8 GiB"} {
		if got := FormatBytes(n); got != want {
			t.Errorf("FormatBytes(%d) = %q, want %q", n, got, want)
		}
	}
}

// The line-rate judgement perftest and osu_bw/osu_bibw share: the same
// cases give the same statuses, each reason opening with the tool's own
// statement of the peak.
func TestLineRateJudgementSharedByPerftestAndOSU(t *testing.T) {
	t.Parallel()
	perftest := func(gbps float64, bidirectional bool) Result {
		r := Result{Tool: "ib_write_bw", Kind: KindPerftestBW, OK: true,
			PerftestBW: []PerftestBWRow{{Bytes: 1 << 20, Iterations: 5000, BWAvgGbps: gbps}}}
		r.Info.Bidirectional = bidirectional
		return r
	}
	osu := func(tool string, gbps float64) Result {
		return Result{Tool: tool, Kind: KindOSUBW, OK: true, Summary: map[string]float64{SumMaxBWGbps: gbps}}
	}
	for _, tc := range []struct {
		name     string
		scenario string
		result   Result
		line     float64
		want     Verdict
	}{
		{
			name: "perftest pass", scenario: "rdma", result: perftest(95, false), line: 100,
			want: Verdict{Status: StatusPass, Measured: 95, Target: 90,
				Reason: "95.00 Gb/s at 1 MiB = 95.0% of 100 Gb/s line rate; pass at 90%"},
		},
		{
			name: "osu_bw pass", scenario: "rdma", result: osu("osu_bw", 95), line: 100,
			want: Verdict{Status: StatusPass, Measured: 95, Target: 90,
				Reason: "peak 95.00 Gb/s (11.88 GB/s) = 95.0% of 100 Gb/s line rate; pass at 90%"},
		},
		{
			name: "perftest fail", scenario: "rdma", result: perftest(50, false), line: 100,
			want: Verdict{Status: StatusFail, Measured: 50, Target: 90,
				Reason: "50.00 Gb/s at 1 MiB = 50.0% of 100 Gb/s line rate; pass at 90%"},
		},
		{
			name: "osu_bw fail", scenario: "rdma", result: osu("osu_bw", 50), line: 100,
			want: Verdict{Status: StatusFail, Measured: 50, Target: 90,
				Reason: "peak 50.00 Gb/s (6.25 GB/s) = 50.0% of 100 Gb/s line rate; pass at 90%"},
		},
		{
			name: "perftest TCP scenario", scenario: "tcp", result: perftest(20, false), line: 100,
			want: Verdict{Status: StatusInfo, Measured: 20, Target: 90,
				Reason: "20.00 Gb/s at 1 MiB = 20.0% of 100 Gb/s line rate; pass at 90%; TCP scenario, not expected to reach line rate"},
		},
		{
			name: "osu_bw TCP scenario", scenario: "tcp", result: osu("osu_bw", 20), line: 100,
			want: Verdict{Status: StatusInfo, Measured: 20, Target: 90,
				Reason: "peak 20.00 Gb/s (2.50 GB/s) = 20.0% of 100 Gb/s line rate; pass at 90%; TCP scenario, not expected to reach line rate"},
		},
		{
			name: "perftest above the line rate", scenario: "rdma", result: perftest(150, false), line: 100,
			want: Verdict{Status: StatusWarn, Measured: 150, Target: 90,
				Reason: "150.00 Gb/s at 1 MiB = 150.0% of 100 Gb/s line rate; pass at 90%; above what the link can carry: is the line rate right?"},
		},
		{
			name: "osu_bw above the line rate", scenario: "rdma", result: osu("osu_bw", 150), line: 100,
			want: Verdict{Status: StatusWarn, Measured: 150, Target: 90,
				Reason: "peak 150.00 Gb/s (18.75 GB/s) = 150.0% of 100 Gb/s line rate; pass at 90%; above what the link can carry: is the line rate right?"},
		},
		{
			name: "perftest bidirectional", scenario: "rdma", result: perftest(190, true), line: 100,
			want: Verdict{Status: StatusPass, Measured: 190, Target: 180,
				Reason: "190.00 Gb/s at 1 MiB = 95.0% of 200 Gb/s line rate (x2: bidirectional); pass at 90%"},
		},
		{
			name: "osu_bibw bidirectional", scenario: "rdma", result: osu("osu_bibw", 190), line: 100,
			want: Verdict{Status: StatusPass, Measured: 190, Target: 180,
				Reason: "peak 190.00 Gb/s (23.75 GB/s) = 95.0% of 200 Gb/s line rate (x2: bidirectional); pass at 90%"},
		},
		{
			name: "perftest bidirectional above twice the line rate", scenario: "rdma", result: perftest(250, true), line: 100,
			want: Verdict{Status: StatusWarn, Measured: 250, Target: 180,
				Reason: "250.00 Gb/s at 1 MiB = 125.0% of 200 Gb/s line rate (x2: bidirectional); pass at 90%; above what the link can carry: is the line rate right?"},
		},
		{
			name: "osu_bibw above twice the line rate", scenario: "rdma", result: osu("osu_bibw", 250), line: 100,
			want: Verdict{Status: StatusWarn, Measured: 250, Target: 180,
				Reason: "peak 250.00 Gb/s (31.25 GB/s) = 125.0% of 200 Gb/s line rate (x2: bidirectional); pass at 90%; above what the link can carry: is the line rate right?"},
		},
		{
			name: "perftest without a line rate", scenario: "rdma", result: perftest(95, false),
			want: Verdict{Status: StatusSkip, Measured: 95,
				Reason: "95.00 Gb/s at 1 MiB; no line rate given"},
		},
		{
			name: "osu_bw without a line rate", scenario: "rdma", result: osu("osu_bw", 95),
			want: Verdict{Status: StatusSkip, Measured: 95,
				Reason: "peak 95.00 Gb/s (11.88 GB/s); no line rate given"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			in := JudgeInput{Results: []Labelled{{Scenario: tc.scenario, Result: tc.result}}, LineRateGbps: tc.line}
			want := tc.want
			want.Check, want.Scenario, want.Tool, want.Unit = CheckLineRate, tc.scenario, tc.result.Tool, "Gb/s"
			if d := cmp.Diff(want, got(findVerdict(t, Judge(in), CheckLineRate, tc.scenario))); d != "" {
				t.Errorf("verdict (-want +got):\n%s", d)
			}
		})
	}
}
