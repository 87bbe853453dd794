package bench

import (
	"encoding/json"
	"strings"
	"testing"
)

// Values no tool prints (a negative message size, bandwidth, latency or
// throughput: "-18.7% of line rate") fail the run in every parser, text
// and JSON.
func TestNegativeValuesFailTheRun(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, vector, old, new, want string
	}{
		{"perftest text bandwidth", "perftest_ib_write_bw_all_gbits_roce_k8s_pods__nvidia_cloud-native-docs.txt",
			"92.40              92.39", "-92.40              -92.39", "negative bandwidth -92.39 for 2097152 bytes"},
		{"perftest JSON bandwidth", "SYNTHETIC_perftest_out_json_ib_write_bw_mibps_roce__from_format_strings.txt",
			`"BW_average": 2229.27`, `"BW_average": -2229.27`, "negative bandwidth"},
		{"perftest JSON message size", "SYNTHETIC_perftest_out_json_ib_write_bw_mibps_roce__from_format_strings.txt",
			`"MsgSize": 65536`, `"MsgSize": -65536`, "negative message size -65536"},
		{"nccl-tests bus bandwidth", "nccl-tests_all_reduce_perf_2node_16gpu_k8s_mpijob_ib_sriov__azure_aks-rdma-infiniband.txt",
			"-1    99.09    0.00    0.00", "-1    99.09    0.00    -3.00", "negative out-of-place bus bandwidth -3 for 8 bytes"},
		{"OSU bandwidth", "osu_bw_cuda_v7.2_D_D_header_order__EESSI-software-layer-pr-716.txt",
			"\n2                       1.19", "\n2                       -1.19", "negative bandwidth"},
		{"training throughput", "tf_cnn_benchmarks_resnet50_1gpu_no_horovod__tensorflow-benchmarks-pr-63.txt",
			"images/sec: 139.6", "images/sec: -139.6", "negative throughput"},
		{"iperf3 interval", "",
			`"bits_per_second": 1e9}}]`, `"bits_per_second": -1e9}}]`, "negative bandwidth -1 Gb/s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			in := `{"start": {"version": "iperf 3.9"}, "intervals": [{"sum": {"start": 0, "end": 1, "bits_per_second": 1e9}}],
 "end": {"sum_sent": {"start": 0, "end": 1, "bits_per_second": 1e9}, "sum_received": {"start": 0, "end": 1, "bits_per_second": 1e9}}}`
			if tc.vector != "" {
				in = string(loadVector(t, tc.vector))
			}
			if !strings.Contains(in, tc.old) {
				t.Fatalf("%s lacks %q", tc.vector, tc.old)
			}
			r := Parse([]byte(strings.Replace(in, tc.old, tc.new, 1)))
			if r.OK || !strings.Contains(r.Error, tc.want) {
				t.Errorf("ok=%v error %q, want it failed: %q", r.OK, r.Error, tc.want)
			}
			if !Parse([]byte(in)).OK {
				t.Errorf("the unchanged vector does not parse ok")
			}
		})
	}
}

// bench parse --json output edited to hold a negative value reads back as
// a failed result (bench report reads that form too).
func TestNegativeValuesInTheJSONContract(t *testing.T) {
	t.Parallel()
	var r Result
	doc := `{"tool": "ib_write_bw", "ok": true, "error": "", "summary": {"max_bw_avg_gbps": -18.7},
		"rows": [{"bytes": 65536, "iterations": 5000, "bw_peak_gbps": null, "bw_avg_gbps": -18.7, "msg_rate_mpps": 0.03}]}`
	if err := json.Unmarshal([]byte(doc), &r); err != nil {
		t.Fatal(err)
	}
	if r.OK || !strings.Contains(r.Error, "negative bandwidth -18.7 for 65536 bytes") {
		t.Errorf("ok=%v error %q, want it failed", r.OK, r.Error)
	}
}
