package bench

import (
	"strings"
	"testing"
)

func TestReportReadsToolJSON(t *testing.T) {
	iperf := vectorFile(t, "iperf3_3.9_tcp_json_omit3_gcp_to_ibm__cloudpilot-project-results.txt")
	out, _, err := run(t, "", "report", "--out", t.TempDir(), "--result", "rdma="+vectorFile(t, roceBW), "--result", "tcp="+iperf)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !strings.Contains(squash(out), "PASS rdma-vs-tcp rdma ib_write_bw large-message bandwidth: RDMA 92.44 Gb/s vs TCP 0.0422 Gb/s") {
		t.Errorf("output:\n%s", out)
	}
}

func TestParsePerftestJSONUnit(t *testing.T) {
	path := vectorFile(t, "SYNTHETIC_perftest_out_json_ib_write_bw_mibps_roce__from_format_strings.txt")
	for flag, want := range map[string]string{"--perftest-json-gbits=false": "max_bw_avg_gbps=18.700472156", "--perftest-json-gbits=true": "max_bw_avg_gbps=2229.27"} {
		for _, suite := range []string{"auto", "perftest"} {
			out, _, err := run(t, "", "parse", flag, "--suite", suite, path)
			if err != nil || !strings.Contains(out, want) || !strings.Contains(out, "ib_write_bw, 1 rows, ok") {
				t.Errorf("%s --suite %s: %v\n%s", flag, suite, err, out)
			}
		}
	}
	out, _, err := run(t, "", "parse", "--suite", "iperf3", vectorFile(t, "iperf3_3.9_tcp_json_omit3_gcp_to_ibm__cloudpilot-project-results.txt"))
	if err != nil || !strings.Contains(squash(out), "3.000128 4.000242 0.052422826 31 false") {
		t.Errorf("iperf3: %v\n%s", err, out)
	}
}
