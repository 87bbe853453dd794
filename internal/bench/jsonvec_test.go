package bench

import (
	"strings"
	"testing"
)

var jsonVectorWants = map[string]vectorWant{
	// Railyard's own TCP probe: iperf3-compatible JSON, read by the iperf3
	// parser and labelled with the probe's name (a TCP result, not iperf3).
	"railyard-tcp-probe_loopback_2streams_3s__railyard.txt": {
		tool: ToolTCPProbe, kind: KindIperf3, ok: true, rows: 4,
		summary: map[string]float64{SumSentGbps: 25.5045861, SumReceivedGbps: 25.50195981},
		check: func(t *testing.T, r Result) {
			second := r.Iperf[1]
			if !near(second.Gbps, 26.135742687) || !near(second.StartS, 1.000011788) || second.Retransmits != nil || second.Omitted {
				t.Errorf("row = %+v", second)
			}
		},
	},
	"iperf3_3.9_tcp_json_omit3_gcp_to_ibm__cloudpilot-project-results.txt": {
		tool: ToolIperf3, kind: KindIperf3, ok: true, rows: 13,
		summary: map[string]float64{SumSentGbps: 0.042982423, SumReceivedGbps: 0.04223193, SumRetransmits: 680},
		check: func(t *testing.T, r Result) {
			first, fourth := r.Iperf[0], r.Iperf[3]
			if !first.Omitted || fourth.Omitted || !near(fourth.Gbps, 0.062898079) || fourth.Retransmits == nil || *fourth.Retransmits != 29 ||
				!near(fourth.StartS, 6.2e-05) || !near(fourth.EndS, 1.0002) {
				t.Errorf("rows = %+v, %+v", first, fourth)
			}
		},
	},
	"SYNTHETIC_perftest_out_json_ib_write_bw_mibps_roce__from_format_strings.txt": {
		tool: "ib_write_bw", kind: KindPerftestBW, ok: true, rows: 1,
		summary: map[string]float64{SumMaxBWAvgGbps: 18.700472156},
		info:    Info{Device: "mlx5_11", LinkType: "Ethernet", Transport: "IB", MTU: 1024, QPs: 1, Unit: "MiB/s"},
		check: func(t *testing.T, r Result) {
			row := r.PerftestBW[0]
			if row.Bytes != 65536 || row.Iterations != 5000 || !near(row.MsgRateMpps, 0.035668) {
				t.Errorf("row = %+v", row)
			}
			f64(t, "peak", row.BWPeakGbps, 44.40526422) // 5293.52 MiB/s
		},
	},
	"SYNTHETIC_perftest_out_json_ib_send_lat_and_output_bandwidth_bugs__from_format_strings.txt": {
		tool: "ib_send_lat", kind: KindPerftestLat, ok: true, rows: 1,
		summary: map[string]float64{SumMinLatTypicalUs: 1.01},
		info:    Info{Device: "mlx5_0", LinkType: "IB", Transport: "IB", MTU: 4096, QPs: 1},
		check: func(t *testing.T, r Result) {
			row := r.PerftestLat[0]
			f64(t, "p99.9", row.LatP999Us, 4.12)
			f64(t, "avg", row.LatAvgUs, 1.03)
			if row.Bytes != 2 || row.Iterations != 1000 {
				t.Errorf("row = %+v", row)
			}
		},
	},
}

// perftest's own JSON bugs: --output=bandwidth leaves a comma before "}",
// raw QoS runs print an unquoted "sl:" key.
func TestPerftestJSONQuirksAndGbits(t *testing.T) {
	info := "{\n\"test_info\": {\n\"test\": \"RDMA_Write_Bidirectional_BW_Test\",\n\"Device\": \"mlx5_0\",\n\"Link_type\": \"IB\"\n},\n"
	bw := ParseWith([]byte(info+"\"results\": {\n\"bw_avg\": 97.5,\n\n}\n}\n"), Options{PerftestJSONGbits: true})
	if !bw.OK || bw.Tool != "ib_write_bw" || !bw.Info.Bidirectional || bw.Rows() != 0 || bw.Summary[SumMaxBWAvgGbps] != 97.5 || bw.Info.Unit != "Gb/s" {
		t.Errorf("--output=bandwidth: %+v", bw)
	}
	qos := Parse([]byte(info + "\"results\": {\n\"MsgSize\": 65536,\nsl: 3,\n\"n_iterations\": 5000,\n\"BW_peak\": 11000.00,\n\"BW_average\": 10900.00,\n \"MsgRate\": 0.17\n}\n}\n"))
	if !qos.OK || len(qos.PerftestBW) != 1 || !near(qos.PerftestBW[0].BWAvgGbps, 91.4358272) {
		t.Errorf("raw qos: %+v", qos)
	}
	for name, in := range map[string]string{
		"no results": info + "\"x\": 1}",
		"overflow":   info + "\"results\": {\"MsgSize\": 1, \"BW_average\": 1e400}}",
	} {
		if r := Parse([]byte(in)); r.OK || r.Tool != "ib_write_bw" {
			t.Errorf("%s: %+v", name, r)
		}
	}
}

func TestIperf3ErrorAndUnfinished(t *testing.T) {
	r := Parse([]byte(`{"start": {"connected": []}, "intervals": [], "end": {}, "error": "unable to connect to server: Connection refused"}`))
	if r.OK || r.Kind != KindIperf3 || !strings.Contains(r.Error, "Connection refused") {
		t.Errorf("error: %+v", r)
	}
	r = ParseIperf3([]byte(`{"start": {}, "intervals": [{"sum": {"start": 0, "end": 1, "bits_per_second": 9.4e9}}], "end": {}}`))
	if r.OK || len(r.Iperf) != 1 || !strings.Contains(r.Error, "did not finish") {
		t.Errorf("unfinished: %+v", r)
	}
	if r := ParseIperf3([]byte("[1,2]")); r.OK || r.Error != "not iperf3 --json output" {
		t.Errorf("not json: %+v", r)
	}
}

// bench plan's TCP pod pair runs iperf3: its result is compared with the
// RDMA perftest run.
func TestRDMAPerftestVersusIperf3(t *testing.T) {
	rdma := Parse(loadVector(t, roceVector))
	tcp := Parse(loadVector(t, "iperf3_3.9_tcp_json_omit3_gcp_to_ibm__cloudpilot-project-results.txt"))
	v := findVerdict(t, Judge(JudgeInput{Results: []Labelled{{Scenario: "rdma", Result: rdma}, {Scenario: "tcp", Result: tcp}}}), CheckRDMAvsTCP, "rdma")
	if v.Status != StatusPass || !near(v.Measured, 92.44/0.04223193) {
		t.Errorf("verdict = %+v", v)
	}
}

func FuzzParseJSONOutputs(f *testing.F) {
	addVectorSeeds(f)
	f.Add([]byte(`{"test_info": {"test": "Atomic_FETCH_AND_ADD_BW_Test"}, "results": {"MsgSize": 8, "BW_average": 1, "BW_peak": 0},}`))
	f.Add([]byte(`{"start": {}, "end": {"sum": {"bits_per_second": 1e9}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		checkInvariants(t, ParseWith(data, Options{PerftestJSONGbits: len(data)%2 == 0}))
	})
}

// kubectl logs --tail=3 --prefix of an nccl-tests launcher: rows only.
func TestNCCLRowsWithoutHeader(t *testing.T) {
	in := "[pod/bench-nccl-rdma-launcher-5x2kq/launcher]    268435456      67108864     float     sum      -1   2801.3   95.83  179.68      0   2795.1   96.04  180.07      0\n" +
		"[pod/bench-nccl-rdma-launcher-5x2kq/launcher]    536870912     134217728     float     sum      -1   5541.9   96.88  181.65      0   5540.2   96.90  181.69      0\n" +
		"[pod/bench-nccl-rdma-launcher-5x2kq/launcher] # Avg bus bandwidth    : 181.02\n"
	r := Parse([]byte(in))
	if r.Kind != KindNCCL || !r.OK || len(r.NCCL) != 2 || !near(r.Summary[SumMaxBusBWGBps], 181.69) || !near(r.Summary[SumAvgBusBWGBps], 181.02) {
		t.Errorf("got %+v", r)
	}
	// Two numbers on a line are no nccl-tests row.
	if Detect([]byte("1 2\n")) != FamilyUnknown {
		t.Error("two numbers detected as a suite")
	}
}

// A pod log holds the tool's stdout and stderr: the JSON report, then
// the error line the failed command printed. The text after the JSON
// value is ignored, so the failure is read from the report.
func TestJSONOutputFollowedByStderr(t *testing.T) {
	log := `{"start":{"version":"railyard-tcp-probe/1 (railyard 0.1.0)"},"intervals":[],"end":{},` +
		`"error":"tcp probe client: connect to 10.217.0.5:5999: 3 attempts in 3s: connection refused"}` + "\n" +
		"railyard: tcp probe client: connect to 10.217.0.5:5999: 3 attempts in 3s: connection refused\n"
	r := Parse([]byte(log))
	if r.OK || r.Tool != ToolTCPProbe || r.Kind != KindIperf3 || r.Error != "tcp probe client: connect to 10.217.0.5:5999: 3 attempts in 3s: connection refused" {
		t.Errorf("parsed %s %s ok=%v %q", r.Tool, r.Kind, r.OK, r.Error)
	}
}

// The runtime may log the stderr line before the JSON on stdout (two
// pipes, read concurrently): lines before a tool's JSON are skipped too.
// Text whose later line starts with '{' but is no tool JSON stays text.
func TestJSONOutputAfterStderr(t *testing.T) {
	log := "railyard: tcp probe client: connect to 10.217.0.5:5999: connection refused\n" +
		`{"start":{"version":"railyard-tcp-probe/1"},"intervals":[],"end":{},"error":"tcp probe client: connect to 10.217.0.5:5999: connection refused"}` + "\n"
	r := Parse([]byte(log))
	if r.OK || r.Tool != ToolTCPProbe || r.Error != "tcp probe client: connect to 10.217.0.5:5999: connection refused" {
		t.Errorf("parsed %s ok=%v %q", r.Tool, r.OK, r.Error)
	}
	text := "# Collective test starting: all_reduce_perf\n{not json}\n"
	if r := Parse([]byte(text)); r.Tool != "all_reduce_perf" {
		t.Errorf("text with a brace line parsed as %s %s", r.Tool, r.Kind)
	}
}
