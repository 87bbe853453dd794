package bench

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// loadVector reads a saved tool output from testdata/vectors (copied from the
// shared research set) and strips its first "# SOURCE:" line.
func loadVector(t testing.TB, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "vectors", name))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(data, []byte("# SOURCE:")) {
		t.Fatalf("%s: first line is not a # SOURCE: comment", name)
	}
	if i := bytes.IndexByte(data, '\n'); i >= 0 {
		return data[i+1:]
	}
	return nil
}

type vectorWant struct {
	tool    string
	kind    Kind
	ok      bool
	err     string // substring of Error; "" means Error must be empty
	rows    int
	summary map[string]float64
	info    Info
	check   func(t *testing.T, r Result)
}

func f64(t *testing.T, name string, got *float64, want float64) {
	t.Helper()
	if got == nil {
		t.Errorf("%s = nil, want %v", name, want)
		return
	}
	if !near(*got, want) {
		t.Errorf("%s = %v, want %v", name, *got, want)
	}
}

func near(a, b float64) bool {
	d := a - b
	if d < 0 {
		d = -d
	}
	return d <= 1e-9*max(1, abs(b))
}

func abs(v float64) float64 {
	if v < 0 {
		return -v
	}
	return v
}

var vectorWants = map[string]vectorWant{
	"SYNTHETIC_nccl-tests2.19.6_all_reduce_perf_2node_16gpu__from_format_strings.txt": {
		tool: "all_reduce_perf", kind: KindNCCL, ok: true, rows: 4,
		summary: map[string]float64{SumAvgBusBWGBps: 190.338, SumMaxBusBWGBps: 391.12, SumOutOfBounds: 0},
		info:    Info{Ranks: 16, Nodes: 2},
		check: func(t *testing.T, r Result) {
			last := r.NCCL[3]
			if last.Bytes != 8589934592 || last.Count != 2147483648 || last.Type != "float" || last.Redop != "sum" {
				t.Errorf("last row = %+v", last)
			}
			if !near(last.OOPTimeUs, 41210.0) || !near(last.OOPAlgBWGBps, 208.44) || !near(last.OOPBusBWGBps, 390.83) ||
				!near(last.IPBusBWGBps, 391.12) || last.OOPWrong == nil || *last.OOPWrong != 0 || last.IPWrong == nil || *last.IPWrong != 0 {
				t.Errorf("last row values = %+v", last)
			}
		},
	},
	"SYNTHETIC_perftest6.29_ext_row_and_output_modes__from_format_strings.txt": {
		// A collection of snippets without any table header: nothing to
		// parse as a whole. The 6-decimal row (a) is tested with a header in
		// TestPerftestExtRowFromSyntheticVector.
		tool: ToolUnknown, kind: KindUnknown, ok: false, err: "no perftest, nccl-tests, OSU or training output recognised", rows: 0,
	},
	"SYNTHETIC_perftest6.29_ib_write_bw_gbits_q4_roce_client__from_format_strings.txt": {
		tool: "ib_write_bw", kind: KindPerftestBW, ok: true, rows: 1,
		summary: map[string]float64{SumMaxBWAvgGbps: 391.87},
		info:    Info{Device: "mlx5_0", LinkType: "Ethernet", Transport: "IB", MTU: 4096, QPs: 4},
		check: func(t *testing.T, r Result) {
			row := r.PerftestBW[0]
			if row.Bytes != 1048576 || row.Iterations != 20000 || !near(row.MsgRateMpps, 0.046716) {
				t.Errorf("row = %+v", row)
			}
			f64(t, "peak", row.BWPeakGbps, 392.41)
		},
	},
	"SYNTHETIC_perftest6.29_latency_table_row__from_format_strings.txt": {
		tool: ToolPerftestNoName, kind: KindPerftestLat, ok: true, rows: 1,
		summary: map[string]float64{SumMinLatTypicalUs: 1.47},
		check: func(t *testing.T, r Result) {
			row := r.PerftestLat[0]
			if row.Bytes != 2 || row.Iterations != 1000 {
				t.Errorf("row = %+v", row)
			}
			f64(t, "min", row.LatMinUs, 1.42)
			f64(t, "max", row.LatMaxUs, 5.19)
			f64(t, "typical", row.LatTypicalUs, 1.47)
			f64(t, "avg", row.LatAvgUs, 1.48)
			f64(t, "p99", row.LatP99Us, 1.57)
			f64(t, "p99.9", row.LatP999Us, 5.19)
		},
	},
	"nccl-tests_1node_4gpu_old_format_Test_NCCL_failure__nccl-issue-473.txt": {
		tool: ToolNCCLTestsNoName, kind: KindNCCL, ok: false, rows: 0,
		err:  "fastmoe: Test NCCL failure common.cu:777 'unhandled system error'",
		info: Info{Ranks: 4, Nodes: 1},
	},
	"nccl-tests_2node_1gpu_each_tree_busbw_eq_algbw_partial__nccl-tests-issue-232.txt": {
		// Cut inside the 6th row ("    671088"): 5 complete rows, no footer.
		tool: ToolNCCLTestsNoName, kind: KindNCCL, ok: true, rows: 5,
		summary: map[string]float64{SumMaxBusBWGBps: 41.52},
		check: func(t *testing.T, r Result) {
			for _, row := range r.NCCL {
				if row.OOPAlgBWGBps != row.OOPBusBWGBps {
					t.Errorf("2 ranks: busbw must equal algbw, row %+v", row)
				}
			}
			if r.NCCL[4].Bytes != 33554432 || !near(r.NCCL[4].IPTimeUs, 808.2) {
				t.Errorf("last complete row = %+v", r.NCCL[4])
			}
			if _, ok := r.Summary[SumAvgBusBWGBps]; ok {
				t.Error("avg busbw invented for a file without footer")
			}
		},
	},
	"nccl-tests_2node_NCCL_WARN_NET_IB_completion_error_partial__nccl-tests-issue-252.txt": {
		tool: ToolNCCLTestsNoName, kind: KindNCCL, ok: false, rows: 0,
		err:  "NCCL WARN NET/IB : Got completion from peer 10.0.35.1<49189> with error 4",
		info: Info{Ranks: 8, Nodes: 2},
	},
	"nccl-tests_2node_NCCL_WARN_connection_closed_unhandled_system_error_old__nccl-tests-issue-15.txt": {
		// The WARN line precedes and explains the failure line.
		tool: ToolNCCLTestsNoName, kind: KindNCCL, ok: false, rows: 0,
		err: "server1:6601:6625 [0] include/socket.h:385 NCCL WARN Net : Connection closed by remote peer",
	},
	"nccl-tests_all_reduce_perf_2node_16gpu_k8s_mpijob_ib_sriov__azure_aks-rdma-infiniband.txt": {
		tool: ToolNCCLTestsNoName, kind: KindNCCL, ok: true, rows: 16,
		summary: map[string]float64{SumAvgBusBWGBps: 56.3994, SumMaxBusBWGBps: 187.22, SumOutOfBounds: 0},
		check: func(t *testing.T, r Result) {
			last := r.NCCL[15]
			if last.Bytes != 8589934592 || !near(last.OOPTimeUs, 86026) || !near(last.OOPBusBWGBps, 187.22) || !near(last.IPBusBWGBps, 187.05) {
				t.Errorf("last row = %+v", last)
			}
			if last.OOPWrong != nil || last.IPWrong != nil {
				t.Errorf("-c 0 prints N/A: wrong counts must be nil, got %v %v", last.OOPWrong, last.IPWrong)
			}
		},
	},
	"nccl-tests_all_reduce_perf_2node_16gpu_k8s_mpijob_ipoib_tcp__azure_aks-rdma-infiniband.txt": {
		tool: ToolNCCLTestsNoName, kind: KindNCCL, ok: true, rows: 16,
		summary: map[string]float64{SumAvgBusBWGBps: 1.38997, SumMaxBusBWGBps: 3.17, SumOutOfBounds: 0},
		check: func(t *testing.T, r Result) {
			if r.NCCL[15].Bytes != 8589934592 || !near(r.NCCL[15].OOPBusBWGBps, 3.15) || !near(r.NCCL[15].IPTimeUs, 5220040) {
				t.Errorf("last row = %+v", r.NCCL[15])
			}
		},
	},
	"nccl-tests_all_reduce_perf_multinode_H100_then_Test_NCCL_failure_partial__nccl-tests-issue-322.txt": {
		tool: ToolNCCLTestsNoName, kind: KindNCCL, ok: false, rows: 5,
		err:     "HCA-128: Test NCCL failure common.cu:1204 'unhandled cuda error",
		summary: map[string]float64{SumMaxBusBWGBps: 367.44},
		info:    Info{Ranks: 65, Nodes: 3},
		check: func(t *testing.T, r Result) {
			if r.NCCL[4].Bytes != 17179869184 || r.NCCL[4].Count != 4294967296 || !near(r.NCCL[4].OOPBusBWGBps, 367.29) {
				t.Errorf("last row = %+v", r.NCCL[4])
			}
		},
	},
	"nccl-tests_all_reduce_perf_very_old_nccl1_format_failure__nccl-tests-issue-5.txt": {
		tool: ToolNCCLTestsNoName, kind: KindNCCL, ok: false, rows: 0,
		err:  "NCCL failure all_reduce.cu:95 'unhandled cuda error'",
		info: Info{Ranks: 8, Nodes: 1},
	},
	"osu_alltoallv_v7.5_tail_latency_columns__pmodels-mpich-issue-7601.txt": {
		tool: "osu_alltoallv", kind: KindOSULat, ok: true, rows: 1,
		summary: map[string]float64{SumMinLatAvgUs: 467.38},
		check: func(t *testing.T, r Result) {
			row := r.OSU[0]
			if row.Bytes != 4096 || row.BWGbps != nil {
				t.Errorf("row = %+v", row)
			}
			f64(t, "avg", row.LatAvgUs, 467.38)
			f64(t, "min", row.LatMinUs, 460.43)
			f64(t, "max", row.LatMaxUs, 474.05)
		},
	},
	"osu_bw_cuda_v7.2_D_D_header_order__EESSI-software-layer-pr-716.txt": {
		tool: "osu_bw", kind: KindOSUBW, ok: true, rows: 26,
		summary: map[string]float64{SumMaxBWGbps: 93130.52 * 0.008},
		check: func(t *testing.T, r Result) {
			if r.OSU[0].Bytes != 1 || r.OSU[25].Bytes != 33554432 {
				t.Errorf("first/last bytes = %d/%d", r.OSU[0].Bytes, r.OSU[25].Bytes)
			}
			f64(t, "bw[0]", r.OSU[0].BWGbps, 0.00808)
			f64(t, "bw[16]", r.OSU[16].BWGbps, 122.35344) // 15294.18 MB/s
		},
	},
	"osu_latency_v7.5_header_partial__openucx-ucx-issue-11020.txt": {
		// Cut after "16": 4 complete rows.
		tool: "osu_latency", kind: KindOSULat, ok: true, rows: 4,
		summary: map[string]float64{SumMinLatAvgUs: 0.92},
		check: func(t *testing.T, r Result) {
			if r.OSU[3].Bytes != 8 {
				t.Errorf("last row = %+v", r.OSU[3])
			}
			f64(t, "lat[3]", r.OSU[3].LatAvgUs, 0.93)
		},
	},
	"osu_reduce_full_cuda_v7.3_collective_format__open-mpi-ompi-pr-12318.txt": {
		// The 2048 row is cut before its Iterations column: 11 rows.
		tool: "osu_reduce", kind: KindOSULat, ok: true, rows: 11,
		summary: map[string]float64{SumMinLatAvgUs: 52.65},
		check: func(t *testing.T, r Result) {
			last := r.OSU[10]
			if last.Bytes != 1024 {
				t.Errorf("last row = %+v", last)
			}
			f64(t, "avg", last.LatAvgUs, 55.48)
			f64(t, "min", last.LatMinUs, 24.05)
			f64(t, "max", last.LatMaxUs, 134.61)
		},
	},
	"perftest_error_completion_with_error_status12_oldformat__softiwarp-issue-27.txt": {
		tool: ToolPerftestNoName, kind: KindUnknown, ok: false, rows: 0,
		err: "Completion with error at client Failed status 12",
	},
	"perftest_error_couldnt_connect_socket__perftest-pr-228.txt": {
		tool: "ib_write_bw", kind: KindPerftestBW, ok: false, rows: 0,
		err: "Couldn't connect to 192.168.125.211:18515",
	},
	"perftest_error_rdma_cm_event_rejected__perftest-issue-54.txt": {
		tool: ToolPerftestNoName, kind: KindUnknown, ok: false, rows: 0,
		err: "RDMA CM event error:",
	},
	"perftest_error_unable_create_qp_efa_ud__perftest-issue-105.txt": {
		tool: ToolPerftestNoName, kind: KindUnknown, ok: false, rows: 0,
		err: "Unable to create QP.", info: Info{Server: true},
	},
	"perftest_ib_read_bw_old_pib_error_couldnt_read_remote__pib-issue-3.txt": {
		tool: "ib_read_bw", kind: KindPerftestBW, ok: false, rows: 0,
		err:  "Couldn't read remote address",
		info: Info{Device: "pib_0", LinkType: "IB", Transport: "IB", MTU: 4096, QPs: 1},
	},
	"perftest_ib_read_lat_k8s_pod_ib__azure_aks-rdma-infiniband.txt": {
		tool: "ib_read_lat", kind: KindPerftestLat, ok: true, rows: 1,
		summary: map[string]float64{SumMinLatTypicalUs: 5.49},
		check: func(t *testing.T, r Result) {
			row := r.PerftestLat[0]
			f64(t, "avg", row.LatAvgUs, 5.50)
			f64(t, "p99", row.LatP99Us, 5.74)
			f64(t, "p99.9", row.LatP999Us, 11.78)
		},
	},
	"perftest_ib_send_bw_z_D_gbits_roce_v5.60_partial__perftest-issue-82.txt": {
		tool: "ib_send_bw", kind: KindPerftestBW, ok: false, rows: 0,
		err:  "no result rows found",
		info: Info{Device: "mlx5_bond_0", LinkType: "Ethernet", Transport: "IB", MTU: 4096, QPs: 1},
	},
	"perftest_ib_send_lat_roce_cpufreq_warning_partial__ucx-issue-6242.txt": {
		// The only data row is cut after 5 of 9 columns; the CPU frequency
		// warnings are not errors.
		tool: "ib_send_lat", kind: KindPerftestLat, ok: false, rows: 0,
		err:  "no result rows found",
		info: Info{Device: "mlx5_bond_0", LinkType: "Ethernet", Transport: "IB", MTU: 1024, QPs: 1},
	},
	"perftest_ib_write_bw_D10_MBsec_server_roce_partial__perftest-issue-234.txt": {
		tool: "ib_write_bw", kind: KindPerftestBW, ok: false, rows: 0,
		err:  "no result rows found",
		info: Info{Device: "mlx5_0", LinkType: "Ethernet", Transport: "IB", MTU: 4096, QPs: 1, Server: true},
	},
	"perftest_ib_write_bw_all_gbits_ib_smallsize_6decimals_partial__perftest-issue-132.txt": {
		// 6-decimal rows then 2-decimal rows; cut inside the 16-byte row:
		// the rows are read, and the run is not ok (its larger messages
		// are missing).
		tool: "ib_write_bw", kind: KindPerftestBW, ok: false, rows: 3,
		err:     "output cut off after the 8 B row",
		summary: map[string]float64{SumMaxBWAvgGbps: 0.17},
		info:    Info{Device: "mlx5_0", LinkType: "IB", Transport: "IB", MTU: 4096, QPs: 1},
		check: func(t *testing.T, r Result) {
			if !near(r.PerftestBW[0].BWAvgGbps, 0.042185) || !near(r.PerftestBW[2].MsgRateMpps, 2.641399) {
				t.Errorf("rows = %+v", r.PerftestBW)
			}
			f64(t, "peak[1]", r.PerftestBW[1].BWPeakGbps, 0.084507)
		},
	},
	"perftest_ib_write_bw_all_gbits_k8s_pod_ib_hdr200__azure_aks-rdma-infiniband.txt": {
		tool: "ib_write_bw", kind: KindPerftestBW, ok: true, rows: 23,
		summary: map[string]float64{SumMaxBWAvgGbps: 196.64},
		check: func(t *testing.T, r Result) {
			last := r.PerftestBW[22]
			if last.Bytes != 8388608 || !near(last.BWAvgGbps, 196.55) || !near(last.MsgRateMpps, 0.002929) {
				t.Errorf("last row = %+v", last)
			}
		},
	},
	"perftest_ib_write_bw_all_gbits_roce_k8s_pods__nvidia_cloud-native-docs.txt": {
		tool: "ib_write_bw", kind: KindPerftestBW, ok: true, rows: 23,
		summary: map[string]float64{SumMaxBWAvgGbps: 92.46},
		info:    Info{Device: "mlx5_0", LinkType: "Ethernet", Transport: "IB", MTU: 1024, QPs: 1},
		check: func(t *testing.T, r Result) {
			if r.PerftestBW[13].Bytes != 16384 || !near(r.PerftestBW[13].BWAvgGbps, 92.46) {
				t.Errorf("row 13 = %+v", r.PerftestBW[13])
			}
		},
	},
	"perftest_ib_write_bw_bidir_q2_D30_outjson_partial__ngc_multinode_perf-issue-108.txt": {
		tool: "ib_write_bw", kind: KindPerftestBW, ok: false, rows: 0,
		err:  "no result rows found",
		info: Info{Device: "mlx5_3", Transport: "IB", MTU: 4096, QPs: 2, Bidirectional: true},
	},
	"perftest_ib_write_bw_postlist_8B_D60_gbits_roce__perftest-issue-273.txt": {
		tool: "ib_write_bw", kind: KindPerftestBW, ok: true, rows: 1,
		summary: map[string]float64{SumMaxBWAvgGbps: 0.48},
		info:    Info{Device: "ib0", LinkType: "Ethernet", Transport: "IB", MTU: 4096, QPs: 1},
		check: func(t *testing.T, r Result) {
			row := r.PerftestBW[0]
			if row.Bytes != 8 || row.Iterations != 224958464 || row.BWPeakGbps != nil {
				t.Errorf("row = %+v (peak 0.00 with -D must be nil)", row)
			}
		},
	},
	"perftest_ib_write_bw_rdma_cm_server_iwarp_partial__perftest-issue-121.txt": {
		tool: "ib_write_bw", kind: KindPerftestBW, ok: false, rows: 0,
		err:  "no result rows found",
		info: Info{Device: "cxgb4_0", LinkType: "Ethernet", Transport: "IW", MTU: 1024, QPs: 1, Server: true},
	},
	"perftest_ib_write_bw_run_infinitely_rdmacm_roce_partial__perftest-pr-342.txt": {
		// The second interval row is cut after its peak column.
		tool: "ib_write_bw", kind: KindPerftestBW, ok: true, rows: 1,
		summary: map[string]float64{SumMaxBWAvgGbps: 42.31},
		check: func(t *testing.T, r Result) {
			if r.PerftestBW[0].Iterations != 403504 || r.PerftestBW[0].BWPeakGbps != nil {
				t.Errorf("row = %+v", r.PerftestBW[0])
			}
		},
	},
	"perftest_ib_write_bw_server_header_libibverbs_warnings_partial__perftest-issue-262.txt": {
		// libibverbs driver warnings are not errors; the file ends in the
		// address lines.
		tool: "ib_write_bw", kind: KindPerftestBW, ok: false, rows: 0,
		err:  "no result rows found",
		info: Info{Device: "rocep4s0f0", LinkType: "Ethernet", Transport: "IB", MTU: 4096, QPs: 1, Server: true},
	},
}

func TestVectors(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "vectors", "*"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != len(allVectorWants()) {
		t.Errorf("%d vector files, %d expectations", len(files), len(allVectorWants()))
	}
	for _, path := range files {
		name := filepath.Base(path)
		want, ok := allVectorWants()[name]
		if !ok {
			t.Errorf("%s: no expectation; every vector needs one", name)
			continue
		}
		t.Run(name, func(t *testing.T) {
			r := Parse(loadVector(t, name))
			if r.Tool != want.tool || r.Kind != want.kind || r.OK != want.ok || r.Rows() != want.rows {
				t.Errorf("got tool=%q kind=%q ok=%v rows=%d, want tool=%q kind=%q ok=%v rows=%d (error %q)",
					r.Tool, r.Kind, r.OK, r.Rows(), want.tool, want.kind, want.ok, want.rows, r.Error)
			}
			if want.err == "" && r.Error != "" {
				t.Errorf("error = %q, want none", r.Error)
			}
			if want.err != "" && !strings.Contains(r.Error, want.err) {
				t.Errorf("error = %q, want it to contain %q", r.Error, want.err)
			}
			for k, v := range want.summary {
				if got, ok := r.Summary[k]; !ok || !near(got, v) {
					t.Errorf("summary[%s] = %v (present %v), want %v", k, got, ok, v)
				}
			}
			if want.summary != nil && len(r.Summary) != len(want.summary) {
				t.Errorf("summary = %v, want exactly %v", r.Summary, want.summary)
			}
			if want.info != (Info{}) && r.Info != want.info {
				t.Errorf("info = %+v, want %+v", r.Info, want.info)
			}
			if want.check != nil && r.Rows() == want.rows {
				want.check(t, r)
			}
		})
	}
}

// TestPerftestExtRowFromSyntheticVector puts row (a) of the synthetic
// output-modes vector (perftest's REPORT_FMT_EXT, 6 decimals) under the
// Gb/s table header of the synthetic client vector.
func TestPerftestExtRowFromSyntheticVector(t *testing.T) {
	modes := strings.Split(string(loadVector(t, "SYNTHETIC_perftest6.29_ext_row_and_output_modes__from_format_strings.txt")), "\n")
	var extRow string
	for i, l := range modes {
		if l == "(a)" && i+1 < len(modes) {
			extRow = modes[i+1]
		}
	}
	client := string(loadVector(t, "SYNTHETIC_perftest6.29_ib_write_bw_gbits_q4_roce_client__from_format_strings.txt"))
	var header string
	for _, l := range strings.Split(client, "\n") {
		if strings.Contains(l, "#bytes") {
			header = l
		}
	}
	if extRow == "" || header == "" {
		t.Fatal("vector layout changed")
	}
	r := ParsePerftest([]byte(header + "\n" + extRow + "\n"))
	if !r.OK || len(r.PerftestBW) != 1 {
		t.Fatalf("got %+v", r)
	}
	row := r.PerftestBW[0]
	if row.Bytes != 2 || row.Iterations != 5000 || !near(row.BWAvgGbps, 0.042185) || !near(row.MsgRateMpps, 2.636533) {
		t.Errorf("row = %+v", row)
	}
	f64(t, "peak", row.BWPeakGbps, 0.042350)
}
