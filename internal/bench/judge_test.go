package bench

import (
	"strings"
	"testing"
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
