package bench

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// ncclDebugFile copies a log of internal/bench/testdata/nccldebug without
// its "# SOURCE:" line into a temporary file and returns the path.
func ncclDebugFile(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "bench", "testdata", "nccldebug", name))
	if err != nil {
		t.Fatal(err)
	}
	_, data, _ = bytes.Cut(data, []byte("\n"))
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// A job that fell back to TCP sockets on a RoCE fabric: bench parse
// --suite nccl-debug --profile roce-lossless prints the hosts and the
// failed check, and exits non-zero; without the profile it warns.
func TestParseNCCLDebugSocketFallback(t *testing.T) {
	log := ncclDebugFile(t, "socket_fallback_no_ib_device_nccl2.19.txt")
	out, _, err := run(t, "", "parse", "--suite", "nccl-debug", "--profile", "roce-lossless", log)
	if err == nil || !strings.Contains(err.Error(), "1 NCCL check(s) failed") {
		t.Errorf("err = %v", err)
	}
	for _, want := range []string{
		"nccl-debug, 0 rows, ok",
		"NCCL 2.19.3+cuda12.3 INFO lines of 2 host(s):",
		"pod-0: network Socket; NET/IB: no device found; sockets [0]eth0:10.244.1.5<0>; channels 2 via Socket (0 GDRDMA)",
		"FAIL  nccl-network  NCCL fell back to TCP sockets (NET/Socket) on pod-0, pod-1; check first: NET/Socket: NCCL found no usable IB device: check /dev/infiniband in the pod",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	out, _, err = run(t, "", "parse", "--suite", "nccl-debug", log)
	if err != nil || !strings.Contains(out, "WARN  nccl-network") {
		t.Errorf("without a profile: err %v\n%s", err, out)
	}
	// --json: the transport in the contract, the failed check on stderr's error.
	js, _, err := run(t, "", "parse", "--suite", "nccl-debug", "--profile", "infiniband", "--json", log)
	if err == nil || !strings.Contains(err.Error(), "nccl-network: NCCL fell back to TCP sockets") {
		t.Errorf("--json err = %v", err)
	}
	var got struct {
		Tool          string `json:"tool"`
		NCCLTransport struct {
			Hosts []struct {
				Host       string   `json:"host"`
				Networks   []string `json:"networks"`
				NoIBDevice bool     `json:"no_ib_device"`
			} `json:"hosts"`
		} `json:"ncclTransport"`
	}
	if err := json.Unmarshal([]byte(js), &got); err != nil {
		t.Fatalf("%v\n%s", err, js)
	}
	if got.Tool != "nccl-debug" || len(got.NCCLTransport.Hosts) != 2 || !got.NCCLTransport.Hosts[1].NoIBDevice {
		t.Errorf("JSON = %+v", got)
	}
	if _, _, err := run(t, "", "parse", "--profile", "ethernet", log); err == nil || !strings.Contains(err.Error(), "--profile") {
		t.Errorf("bad profile: %v", err)
	}
}

// nccl-tests output with INFO lines between its rows: the table, then the
// transport and its passing checks.
func TestParseNCCLTestsPrintsTransport(t *testing.T) {
	out, _, err := run(t, "", "parse", "--profile", "infiniband", ncclDebugFile(t, "ib_2host_nccl-tests_info_between_rows_nccl2.27.txt"))
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, want := range []string{
		"nccl-tests, 4 rows, ok",
		"ib-0: network IB; HCAs mlx5_0:1/IB mlx5_1:1/IB; GPUDirect RDMA on mlx5_0 mlx5_1; channels 4 via IB (4 GDRDMA)",
		"PASS  nccl-network  NCCL used IB on 2 hosts (8 channels through the network)",
		"PASS  nccl-gdr      GPUDirect RDMA (GDRDMA) on 8 of 8 inter-node channels",
		"PASS  nccl-hosts    2 hosts agree",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// bench report with a topology: mlx5_5, without GPUDirect RDMA, sits
// under GPU3's PCIe switch on a DGX H100, so the check fails; the
// result goes through bench parse --json first.
func TestReportNCCLGDRDisabledNearAGPUFails(t *testing.T) {
	js, _, err := run(t, "", "parse", "--suite", "nccl-debug", "--json", ncclDebugFile(t, "gdr_disabled_hca5_nccl2.18.txt"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "job.json")
	if err := os.WriteFile(path, []byte(js), 0o644); err != nil {
		t.Fatal(err)
	}
	out, _, err := run(t, "", "report", "--result", "rdma="+path, "--machine", "dgx-h100", "--out", t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "1 check(s) failed") {
		t.Errorf("err = %v", err)
	}
	if !strings.Contains(out, "nccl-gdr") || !strings.Contains(out, "GPUDirect RDMA disabled for HCA mlx5_5 on gdr-a, gdr-b; a GPU is near it (PIX or PXB)") {
		t.Errorf("output:\n%s", out)
	}
	// Without a topology the same result warns.
	out, _, err = run(t, "", "report", "--result", "rdma="+path, "--out", t.TempDir())
	if err != nil || !strings.Contains(out, "give the topology (--sysfs or --machine)") {
		t.Errorf("without a topology: err %v\n%s", err, out)
	}
}
