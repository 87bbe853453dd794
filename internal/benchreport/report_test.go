package benchreport

import (
	"bytes"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/railyard-io/railyard/internal/bench"
)

// vector reads a saved tool output copied into the bench package's testdata.
func vector(t *testing.T, name string) bench.Result {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "bench", "testdata", "vectors", name))
	if err != nil {
		t.Fatal(err)
	}
	if i := bytes.IndexByte(data, '\n'); i >= 0 {
		data = data[i+1:] // the "# SOURCE:" line
	}
	r := bench.Parse(data)
	r.Source = name
	return r
}

const (
	roceBW  = "perftest_ib_write_bw_all_gbits_roce_k8s_pods__nvidia_cloud-native-docs.txt"
	hdrBW   = "perftest_ib_write_bw_all_gbits_k8s_pod_ib_hdr200__azure_aks-rdma-infiniband.txt"
	ncclIB  = "nccl-tests_all_reduce_perf_2node_16gpu_k8s_mpijob_ib_sriov__azure_aks-rdma-infiniband.txt"
	ncclTCP = "nccl-tests_all_reduce_perf_2node_16gpu_k8s_mpijob_ipoib_tcp__azure_aks-rdma-infiniband.txt"
	osuLat  = "osu_reduce_full_cuda_v7.3_collective_format__open-mpi-ompi-pr-12318.txt"
	readLat = "perftest_ib_read_lat_k8s_pod_ib__azure_aks-rdma-infiniband.txt"
	failed  = "perftest_error_couldnt_connect_socket__perftest-pr-228.txt"
)

func sampleInput(t *testing.T) Input {
	results := []bench.Labelled{
		{Scenario: "roce-100g", Result: vector(t, roceBW)},
		{Scenario: "ib-200g", Result: vector(t, hdrBW)},
		{Scenario: "rdma", Result: vector(t, ncclIB)},
		{Scenario: "tcp", Result: vector(t, ncclTCP)},
		{Scenario: "pod", Result: vector(t, readLat)},
		{Scenario: "mpi", Result: vector(t, osuLat)},
		{Scenario: "broken", Result: vector(t, failed)},
	}
	in := Input{Results: results, LineRateGbps: 200, LineRateSource: "--line-rate-gbps", NICs: 8, Thresholds: bench.DefaultThresholds()}
	in.Verdicts = bench.Judge(bench.JudgeInput{Results: results, LineRateGbps: 200, NICs: 8})
	return in
}

func TestWriteReport(t *testing.T) {
	dir := t.TempDir()
	files, err := Write(dir, sampleInput(t))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"bandwidth.png", "bandwidth.svg", "latency.png", "latency.svg", "nccl-busbw.png", "nccl-busbw.svg", "nccl-latency.png", "nccl-latency.svg", "report.html", "report.json"}
	if len(files) != len(want) {
		t.Errorf("files = %v", files)
	}
	for _, name := range want {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Error(err)
		}
	}
	html, _ := os.ReadFile(filepath.Join(dir, "report.html"))
	for _, s := range []string{
		`<img src="bandwidth.svg"`, `<img src="nccl-busbw.svg"`,
		"run failed: Couldn&#39;t connect to 192.168.125.211:18515",
		"59.1x speed-up",
		"196.64 Gb/s at 4 MiB = 98.3% of 200 Gb/s line rate",
		"At least one check failed.",
		"Line rate: 200 Gb/s (--line-rate-gbps)",
		"<td>peak bus bandwidth</td><td class=\"num\">187.22 GB/s</td>",
	} {
		if !strings.Contains(string(html), s) {
			t.Errorf("report.html lacks %q", s)
		}
	}
	svg, _ := os.ReadFile(filepath.Join(dir, "bandwidth.svg"))
	for _, s := range []string{"roce-100g (ib_write_bw)", "ib-200g (ib_write_bw)", "line rate 200 Gb/s", "Message size (bytes)", "Bandwidth (Gb/s)"} {
		if !strings.Contains(string(svg), s) {
			t.Errorf("bandwidth.svg lacks %q", s)
		}
	}
	f, err := os.Open(filepath.Join(dir, "latency.png"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := png.Decode(f); err != nil {
		t.Errorf("latency.png: %v", err)
	}
}

func TestChartsSkipWhenNoData(t *testing.T) {
	only := []bench.Labelled{{Scenario: "rdma", Result: vector(t, ncclIB)}}
	if _, ok := BandwidthChart(only, 100); ok {
		t.Error("bandwidth chart from nccl-tests only")
	}
	if _, ok := LatencyChart(only); ok {
		t.Error("latency chart from nccl-tests only")
	}
	c, ok := BusBWChart(only, 200, 8)
	if !ok || len(c.Series) != 1 || len(c.Series[0].X) != 16 || c.Refs[0].Y != 200 {
		t.Errorf("busbw chart = %+v", c)
	}
	dir := t.TempDir()
	files, err := Write(dir, Input{Results: only})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 6 { // nccl-busbw and nccl-latency png+svg, html, json
		t.Errorf("files = %v", files)
	}
}

func TestPrintVerdicts(t *testing.T) {
	var buf bytes.Buffer
	in := sampleInput(t)
	if err := PrintVerdicts(&buf, in.Verdicts); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	if !strings.HasPrefix(out, "STATUS") || !strings.Contains(out, "FAIL    run") || !strings.Contains(out, "PASS    rdma-vs-tcp") {
		t.Errorf("output:\n%s", out)
	}
}

// TestRenderSampleForReview writes the sample report to $RAILYARD_REPORT_DIR
// when set, so a person can open and look at the charts.
func TestRenderSampleForReview(t *testing.T) {
	dir := os.Getenv("RAILYARD_REPORT_DIR")
	if dir == "" {
		t.Skip("set RAILYARD_REPORT_DIR to write the sample report")
	}
	if _, err := Write(dir, sampleInput(t)); err != nil {
		t.Fatal(err)
	}
}

// An input JSON cannot carry (a NaN line rate passed around Judge) fails
// before anything is written: no directory appears.
func TestWriteFailsWithoutPartialDirectory(t *testing.T) {
	in := sampleInput(t)
	in.LineRateGbps = math.NaN()
	dir := filepath.Join(t.TempDir(), "report")
	if _, err := Write(dir, in); err == nil {
		t.Fatal("Write with NaN succeeded")
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("report dir exists after a failed write: %v", err)
	}
	parent, _ := os.ReadDir(filepath.Dir(dir))
	if len(parent) != 0 {
		t.Errorf("staging left behind: %v", parent)
	}
}

// A new directory appears whole; rewriting an existing one replaces the
// report's files and keeps the others.
func TestWriteIntoExistingDirectory(t *testing.T) {
	dir := t.TempDir()
	keep := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(keep, []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "report.json"), []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Write(dir, sampleInput(t)); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(keep); err != nil || string(b) != "mine" {
		t.Errorf("notes.txt = %q, %v", b, err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "report.json")); !strings.Contains(string(b), `"verdicts"`) {
		t.Errorf("report.json not replaced: %.100s", b)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".railyard-report-") {
			t.Errorf("staging dir %s left behind", e.Name())
		}
	}
}
