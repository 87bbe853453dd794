package bench

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/railyard-io/railyard/internal/cli/clitest"

	"github.com/railyard-io/railyard/internal/bench"
	"github.com/railyard-io/railyard/machines"
)

func run(t *testing.T, stdin string, args ...string) (string, string, error) {
	t.Helper()
	return clitest.Run(t, NewCommand, stdin, args...)
}

// vectorFile copies a saved tool output without its "# SOURCE:" line into
// a temporary file and returns the path.
func vectorFile(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "bench", "testdata", "vectors", name))
	if err != nil {
		t.Fatal(err)
	}
	if i := bytes.IndexByte(data, '\n'); i >= 0 {
		data = data[i+1:]
	}
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

const (
	roceBW  = "perftest_ib_write_bw_all_gbits_roce_k8s_pods__nvidia_cloud-native-docs.txt"
	ncclIB  = "nccl-tests_all_reduce_perf_2node_16gpu_k8s_mpijob_ib_sriov__azure_aks-rdma-infiniband.txt"
	ncclTCP = "nccl-tests_all_reduce_perf_2node_16gpu_k8s_mpijob_ipoib_tcp__azure_aks-rdma-infiniband.txt"
	failed  = "perftest_error_couldnt_connect_socket__perftest-pr-228.txt"
)

func TestParseJSONContract(t *testing.T) {
	out, _, err := run(t, "", "parse", "--json", vectorFile(t, roceBW))
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if got["tool"] != "ib_write_bw" || got["ok"] != true || got["error"] != "" {
		t.Errorf("head = %v %v %v", got["tool"], got["ok"], got["error"])
	}
	rows := got["rows"].([]any)
	last := rows[len(rows)-1].(map[string]any)
	if len(rows) != 23 || last["bytes"] != float64(8388608) || last["bw_avg_gbps"] != 92.39 || last["bw_peak_gbps"] != 92.39 || last["msg_rate_mpps"] != 0.001377 || last["iterations"] != float64(5000) {
		t.Errorf("rows: %d, last %v", len(rows), last)
	}
	if s := got["summary"].(map[string]any); s["max_bw_avg_gbps"] != 92.46 {
		t.Errorf("summary %v", s)
	}
}

func TestParseStdinAndFailedRun(t *testing.T) {
	data, err := os.ReadFile(vectorFile(t, failed))
	if err != nil {
		t.Fatal(err)
	}
	out, _, err := run(t, string(data), "parse", "-")
	if err == nil || !strings.Contains(err.Error(), "1 of 1 outputs are failed runs") {
		t.Errorf("err = %v", err)
	}
	if !strings.Contains(out, "-: ib_write_bw, 0 rows, FAILED: Couldn't connect to 192.168.125.211:18515") {
		t.Errorf("output %q", out)
	}
	if _, _, err := run(t, "", "parse", "--suite", "iperf", "-"); err == nil {
		t.Error("unknown suite accepted")
	}
}

func TestParseForcedSuite(t *testing.T) {
	// Without the title, an OSU latency table is still OSU when asked.
	path := filepath.Join(t.TempDir(), "lat.txt")
	if err := os.WriteFile(path, []byte("# Size       Avg Latency(us)\n1   0.94\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, _, err := run(t, "", "parse", "--suite", "osu", "--json", path)
	if err != nil {
		t.Fatal(err)
	}
	var r bench.Result
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	if r.Tool != "osu" || len(r.OSU) != 1 || *r.OSU[0].LatAvgUs != 0.94 {
		t.Errorf("result %+v", r)
	}
}

func TestReportFromRawAndJSON(t *testing.T) {
	// The tcp result goes through bench parse --json first.
	js, _, err := run(t, "", "parse", "--json", vectorFile(t, ncclTCP))
	if err != nil {
		t.Fatal(err)
	}
	tcpJSON := filepath.Join(t.TempDir(), "tcp.json")
	if err := os.WriteFile(tcpJSON, []byte(js), 0o644); err != nil {
		t.Fatal(err)
	}
	outDir := t.TempDir()
	out, _, err := run(t, "", "report",
		"--result", "rdma="+vectorFile(t, ncclIB), "--result", "tcp="+tcpJSON,
		"--result", "bare-metal="+vectorFile(t, roceBW), "--result", "pod="+vectorFile(t, roceBW),
		"--line-rate-gbps", "200", "--nics", "8", "--out", outDir)
	// The RoCE run reaches 46% of 200 Gb/s: two line-rate failures.
	if err == nil || err.Error() != "2 check(s) failed" {
		t.Errorf("err = %v", err)
	}
	for _, want := range []string{
		"PASS    rdma-vs-tcp", "59.1x speed-up",
		"PASS    nccl-busbw         rdma", "INFO    nccl-busbw         tcp",
		"PASS    pod-vs-bare-metal", "0.00% below bare metal; pass within 2.0%",
		"FAIL    line-rate          bare-metal",
		"report: " + filepath.Join(outDir, "report.html"),
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	for _, f := range []string{"report.html", "report.json", "bandwidth.png", "bandwidth.svg", "nccl-busbw.png"} {
		if _, err := os.Stat(filepath.Join(outDir, f)); err != nil {
			t.Error(err)
		}
	}
}

func TestReportLineRateFromMachine(t *testing.T) {
	out, _, err := run(t, "", "report", "--result", "rdma="+vectorFile(t, ncclIB), "--machine", "dgx-a100", "--out", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	// dgx-a100: 8 GPU rails on 200G HDR -> 200 GB/s.
	if !strings.Contains(out, "93.6% of 8 NICs x 200 Gb/s = 200.0 GB/s") {
		t.Errorf("output:\n%s", out)
	}
	_, _, err = run(t, "", "report", "--result", "rdma="+vectorFile(t, roceBW), "--machine", "dgx-h100", "--device", "mlx5_2", "--out", t.TempDir())
	if err != nil { // mlx5_2 is a 100G RoCE port: 92.4% passes
		t.Errorf("dgx-h100 mlx5_2: %v", err)
	}
}

func TestReportFlagErrors(t *testing.T) {
	f := vectorFile(t, roceBW)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"report"}, "at least one --result"},
		{[]string{"report", "--result", "noequals"}, "want SCENARIO=FILE"},
		{[]string{"report", "--result", "a=/does/not/exist"}, "--result a"},
		{[]string{"report", "--result", "a=" + f, "--line-rate-gbps", "100", "--machine", "dgx-1"}, "mutually exclusive"},
		{[]string{"report", "--result", "a=" + f, "--pass-line-rate", "90"}, "--pass-line-rate 90"},
		{[]string{"report", "--result", "a=" + f, "--device", "mlx5_0"}, "--device needs"},
		{[]string{"report", "--result", "a=" + f, "--machine", "no-such-machine"}, "unknown machine"},
	} {
		_, _, err := run(t, "", tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: err = %v, want %q", tc.args, err, tc.want)
		}
	}
}

func TestPlanCommand(t *testing.T) {
	out, _, err := run(t, "", "plan", "--image", "registry.example/bench:1", "--nodes", "a,b", "--variant", "tcp",
		"--nccl-env", "NCCL_ALGO=Ring", "--perftest-args", "-s 65536 -D 10", "--tests", "perftest,nccl")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"kind: MPIJob", "name: NCCL_IB_DISABLE", "name: NCCL_ALGO", "- IPC_LOCK",
		"railyard.io/rdma_vf: \"1\"", "k8s.v1.cni.cncf.io/networks: railyard-system/railyard-rdma", "iperf3 --client"} {
		if !strings.Contains(out, want) {
			t.Errorf("plan lacks %q", want)
		}
	}
	if strings.Contains(out, "privileged: true") {
		t.Error("privileged pod planned")
	}
	out, _, err = run(t, "", "plan", "--image", "i", "--nodes", "a,b", "--variant", "rdma", "--tests", "perftest", "--perftest-args", "-s 65536 -D 10")
	if err != nil || !strings.Contains(out, "exec ib_write_bw -s 65536 -D 10") {
		t.Errorf("perftest args: %v\n%s", err, out)
	}
	for _, args := range [][]string{
		{"plan", "--image", "i", "--nodes", "a,b", "--variant", "udp"},
		{"plan", "--image", "i", "--nodes", "a,b", "--nccl-env", "NOVALUE"},
		{"plan", "--nodes", "a,b"},
	} {
		if _, _, err := run(t, "", args...); err == nil {
			t.Errorf("%v accepted", args)
		}
	}
}

// TestPlanCommandTwoRails: repeated --resource/--network pairs reach every
// benchmark pod; unequal counts are refused.
func TestPlanCommandTwoRails(t *testing.T) {
	out, _, err := run(t, "", "plan", "--image", "i", "--nodes", "a,b", "--variant", "rdma",
		"--resource", "intel.com/sriov_111", "--network", "sriov-111",
		"--resource", "intel.com/sriov_112=2", "--network", "sriov-112", "--resource-count", "3")
	if err != nil {
		t.Fatal(err)
	}
	// 2 perftest pods and 1 worker template.
	for want, n := range map[string]int{
		"intel.com/sriov_111: \"3\"":                       6, // requests and limits
		"intel.com/sriov_112: \"2\"":                       6,
		"k8s.v1.cni.cncf.io/networks: sriov-111,sriov-112": 3,
	} {
		if got := strings.Count(out, want); got != n {
			t.Errorf("%q appears %d times, want %d", want, got, n)
		}
	}
	if strings.Contains(out, "railyard.io/rdma_vf") || strings.Contains(out, "railyard-rdma") {
		t.Error("the default rail is still planned")
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--resource", "a.io/x", "--resource", "a.io/y"}, "2 --resource but 1 --network"},
		{[]string{"--resource", "a.io/x", "--network", "x", "--network", "y"}, "1 --resource but 2 --network"},
		{[]string{"--resource-count", "0"}, "--resource-count 0"},
	} {
		args := append([]string{"plan", "--image", "i", "--nodes", "a,b"}, tc.args...)
		if _, _, err := run(t, "", args...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: err = %v, want %q", tc.args, err, tc.want)
		}
	}
}

// TestPlanCommandDeviceClass: --device-class rails come after the
// --resource ones, take no default resource or network, and give each run
// a ResourceClaimTemplate its pods claim.
func TestPlanCommandDeviceClass(t *testing.T) {
	for _, tc := range []struct {
		name   string
		args   []string
		counts map[string]int
		err    string
	}{
		{name: "device class only", args: []string{"--tests", "probe", "--variant", "tcp", "--device-class", "railyard.io-rail0"},
			counts: map[string]int{
				"kind: ResourceClaimTemplate":                               1,
				"name: railyard-bench-probe-tcp-rails":                      1,
				"resourceClaimTemplateName: railyard-bench-probe-tcp-rails": 2,
				"deviceClassName: railyard.io-rail0":                        1,
				"railyard.io/rdma_vf":                                       0, // no default --resource
				"k8s.v1.cni.cncf.io/networks":                               0, // no default --network
			}},
		{name: "resource then class, networks paired", args: []string{"--tests", "perftest", "--variant", "rdma",
			"--resource", "a.io/x", "--device-class", "c=2", "--resource-count", "3", "--network", "nx", "--network", ""},
			counts: map[string]int{
				"name: railyard-bench-perftest-rdma-rails": 1,
				"a.io/x: \"3\"":                   4, // requests and limits of two pods
				"count: 2":                        1,
				"name: rail1":                     1,
				"k8s.v1.cni.cncf.io/networks: nx": 2,
			}},
		{name: "networks must number the rails", args: []string{"--resource", "a.io/x", "--device-class", "c", "--network", "nx"},
			err: "1 --resource and 1 --device-class but 1 --network"},
		{name: "bad count", args: []string{"--device-class", "c=0"}, err: `--device-class "c=0"`},
		{name: "bad class", args: []string{"--device-class", "Rail_0"}, err: `device class "Rail_0"`},
	} {
		out, _, err := run(t, "", append([]string{"plan", "--image", "i", "--nodes", "a,b"}, tc.args...)...)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: err = %v, want %q", tc.name, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		for want, n := range tc.counts {
			if got := strings.Count(out, want); got != n {
				t.Errorf("%s: %q appears %d times, want %d", tc.name, want, got, n)
			}
		}
	}
}

func TestReportLineRateFromSysfs(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "sys")
	if err := machines.WriteSysfs("roce-8gpu-4nic", dir, 0); err != nil {
		t.Fatal(err)
	}
	outDir := t.TempDir()
	out, _, err := run(t, "", "report", "--result", "rdma="+vectorFile(t, roceBW), "--sysfs", dir, "--out", outDir)
	if err != nil {
		t.Fatal(err)
	}
	// Fake sysfs generated from the roce-8gpu-4nic model: 4 x 100G RoCE rails.
	if !strings.Contains(out, "PASS    line-rate") || !strings.Contains(out, "92.44 Gb/s at 256 KiB = 92.4% of 100 Gb/s") {
		t.Errorf("output:\n%s", out)
	}
	html, err := os.ReadFile(filepath.Join(outDir, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(html), "Line rate: 100 Gb/s (sysfs "+dir+": 4 GPU rail NICs at 100 Gb/s: mlx5_0, mlx5_1, mlx5_2, mlx5_3)") {
		t.Errorf("line rate source missing from report.html")
	}
}
