package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/railyard-io/railyard/internal/benchrun"
	"github.com/railyard-io/railyard/internal/benchrun/benchruntest"
	"github.com/railyard-io/railyard/internal/cli/clitest"
	"github.com/railyard-io/railyard/internal/cli/iostreams"
)

const (
	probeServer = "railyard-bench-probe-server-tcp-podnet"
	probeClient = "railyard-bench-probe-client-tcp-podnet"
)

// runWithFakeKubelet runs `bench run` against client-go's fake clientset
// driven by benchruntest's fake kubelet (no cluster here).
func runWithFakeKubelet(t *testing.T, scripts map[string]benchruntest.Script, args ...string) (*benchruntest.FakeKubelet, string, string, error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	k := benchruntest.New(scripts)
	k.Run(ctx, t)
	t.Cleanup(cancel)
	plan, _, err := run(t, "", "plan", "--image", "ghcr.io/railyard-io/railyard:0.1.0", "--nodes", "node-a,node-a",
		"--tests", "probe", "--variant", "tcp-podnet")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "plan.yaml")
	if err := os.WriteFile(path, []byte(plan), 0o644); err != nil {
		t.Fatal(err)
	}
	newCmd := func(s iostreams.Streams) *cobra.Command {
		return newRunCommand(s, func(string) (benchrun.Cluster, error) { return k.Cluster(), nil })
	}
	out, errOut, err := clitest.Run(t, newCmd, "", append([]string{"-f", path, "--poll-interval", "5ms"}, args...)...)
	cancel()
	return k, out, errOut, err
}

func probeVectorLog(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(vectorFile(t, "railyard-tcp-probe_loopback_2streams_3s__railyard.txt"))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// TestRunCommandWithFakeKubelet: plan -> run -> report through the
// command, the cluster being client-go's fake clientset moved by a fake
// kubelet: the runs table, plain progress lines (not a terminal), the
// report directory with the logs, nothing left in the cluster.
func TestRunCommandWithFakeKubelet(t *testing.T) {
	outDir := filepath.Join(t.TempDir(), "report")
	k, out, errOut, err := runWithFakeKubelet(t, map[string]benchruntest.Script{
		probeServer: {RunPolls: 1000, Log: "railyard tcp probe: listening on [::]:5201\n"},
		probeClient: {RunPolls: 2, Log: probeVectorLog(t)},
	}, "--out", outDir)
	if err != nil {
		t.Fatalf("%v\n%s\n%s", err, out, errOut)
	}
	for _, want := range []string{
		"railyard-bench-probe-tcp-podnet  tcp-podnet  succeeded  railyard-tcp-probe: TCP bandwidth 25.502 Gb/s",
		"deleted the 3 objects the run created",
		"report: " + filepath.Join(outDir, "report.html"),
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(errOut, "runs 1/1 done; pods 2/2 created, 2 scheduled") || strings.Contains(errOut, "\r") {
		t.Errorf("progress:\n%q", errOut)
	}
	js, err := os.ReadFile(filepath.Join(outDir, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Results []struct {
			Scenario string `json:"scenario"`
			Result   struct {
				Tool    string             `json:"tool"`
				OK      bool               `json:"ok"`
				Source  string             `json:"source"`
				Summary map[string]float64 `json:"summary"`
			} `json:"result"`
		} `json:"results"`
	}
	if err := json.Unmarshal(js, &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Results) != 1 || rep.Results[0].Scenario != "tcp-podnet" || rep.Results[0].Result.Tool != "railyard-tcp-probe" ||
		!rep.Results[0].Result.OK || rep.Results[0].Result.Summary["received_gbps"] != 25.50195981 ||
		rep.Results[0].Result.Source != "pod/default/"+probeClient {
		t.Errorf("report.json results: %s", js)
	}
	for pod, want := range map[string]string{probeServer: "listening on", probeClient: `"railyard-tcp-probe/1`} {
		data, err := os.ReadFile(filepath.Join(outDir, "logs", pod+".log"))
		if err != nil || !bytes.Contains(data, []byte(want)) {
			t.Errorf("logs/%s.log: %v %.80q", pod, err, data)
		}
	}
	pods, err := k.Client.CoreV1().Pods("").List(context.Background(), metav1.ListOptions{})
	if err != nil || len(pods.Items) != 0 {
		t.Errorf("pods left: %v %d", err, len(pods.Items))
	}
}

// A run whose client fails is in the runs table with its reason, fails
// the run check of the report, and makes the command fail.
func TestRunCommandFailedRun(t *testing.T) {
	outDir := filepath.Join(t.TempDir(), "report")
	_, out, _, err := runWithFakeKubelet(t, map[string]benchruntest.Script{
		probeServer: {RunPolls: 1000},
		probeClient: {RunPolls: 1, Exit: 1, Log: `{"start":{"version":"railyard-tcp-probe/1"},"intervals":[],"end":{},"error":"tcp probe client: connect to 10.217.0.1:5201: connection refused"}` + "\n"},
	}, "--out", outDir, "--timeout", "1m")
	if err == nil || !strings.Contains(err.Error(), "1 of 1 runs failed") || !strings.Contains(err.Error(), "1 check(s) failed") {
		t.Errorf("err = %v", err)
	}
	for _, want := range []string{
		"tcp-podnet  failed  pod " + probeClient + " failed: Failed, container probe exit code 1 (Error); its output: tcp probe client: connect to 10.217.0.1:5201",
		"FAIL    run",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if _, err := os.Stat(filepath.Join(outDir, "report.html")); err != nil {
		t.Error(err)
	}
}

func TestRunCommandTimeoutAndKeep(t *testing.T) {
	start := time.Now()
	k, out, _, err := runWithFakeKubelet(t, map[string]benchruntest.Script{probeServer: {Unschedulable: true}},
		"--out", filepath.Join(t.TempDir(), "r"), "--timeout", "200ms", "--keep")
	if err == nil || !strings.Contains(err.Error(), "1 of 1 runs failed") || time.Since(start) > 20*time.Second {
		t.Errorf("err = %v after %v", err, time.Since(start))
	}
	if !strings.Contains(out, "timed-out  timed out after 200ms while waiting for pod "+probeServer+" Pending (Unschedulable") ||
		!strings.Contains(out, "kept 2 objects (--keep)") {
		t.Errorf("output:\n%s", out)
	}
	pods, err := k.Client.CoreV1().Pods("").List(context.Background(), metav1.ListOptions{})
	if err != nil || len(pods.Items) != 1 {
		t.Errorf("--keep: %v, %d pods left, want the server", err, len(pods.Items))
	}
}

func TestRunCommandErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "give the plan with -f FILE"},
		{[]string{"-f", "/does/not/exist"}, "no such file"},
		{[]string{"-f", "-", "--timeout", "0s"}, "--timeout 0s"},
		{[]string{"-f", "-", "--pass-line-rate", "2"}, "--pass-line-rate 2"},
	} {
		newCmd := func(s iostreams.Streams) *cobra.Command {
			return newRunCommand(s, func(string) (benchrun.Cluster, error) { t.Fatal("connected"); return nil, nil })
		}
		if _, _, err := clitest.Run(t, newCmd, "", tc.args...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: err = %v, want %q", tc.args, err, tc.want)
		}
	}
	// A kubeconfig that does not exist is an error, not a hang.
	if _, _, err := run(t, "apiVersion: v1\nkind: Pod\nmetadata: {name: x, labels: {railyard.io/bench-run: r}, annotations: {railyard.io/bench-result: \"true\"}}\nspec: {containers: [{name: c, image: i}]}\n",
		"run", "-f", "-", "--kubeconfig", "/does/not/exist"); err == nil || !strings.Contains(err.Error(), "kubeconfig") {
		t.Errorf("missing kubeconfig: %v", err)
	}
}

// TestPlanGPUDirectCommand: --tests gpudirect chooses the GPU and NICs
// from a built-in model and says so on stderr.
func TestPlanGPUDirectCommand(t *testing.T) {
	out, errOut, err := run(t, "", "plan", "--image", "i", "--nodes", "a,b", "--tests", "gpudirect", "--variant", "rdma",
		"--machine", "roce-8gpu-4nic", "--gpudirect-gpu", "5")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(errOut, "GPU 0000:86:00.0 (CUDA 5 of 8): near mlx5_2 0000:84:00.0 (PIX), far mlx5_0 0000:05:00.0 (SYS)") {
		t.Errorf("stderr: %s", errOut)
	}
	for _, want := range []string{"exec ib_write_bw -d mlx5_2 --use_cuda=5", "exec ib_write_bw -d mlx5_0 --use_cuda=5", "nvidia.com/gpu: \"8\""} {
		if !strings.Contains(out, want) {
			t.Errorf("plan lacks %q", want)
		}
	}
	if _, _, err := run(t, "", "plan", "--image", "i", "--nodes", "a,b", "--tests", "gpudirect"); err == nil || !strings.Contains(err.Error(), "needs the node's topology") {
		t.Errorf("without a topology: %v", err)
	}
}

// On a terminal the progress is one line redrawn in place with a bar of
// the runs done; elsewhere a plain line per change (TestRunCommand...).
func TestProgressBarOnTerminal(t *testing.T) {
	var buf bytes.Buffer
	p := &progressPrinter{w: &buf, tty: true}
	p.update(benchrun.Progress{Runs: 4, RunsDone: 1, Pods: 8, Created: 4, Scheduled: 3, Running: 2, Succeeded: 1, Elapsed: 2500 * time.Millisecond})
	p.update(benchrun.Progress{Runs: 4, RunsDone: 4, Pods: 8, Created: 8, Scheduled: 8, Succeeded: 8, Elapsed: 9 * time.Second})
	p.done()
	want := "\r\033[K[######------------------] runs 1/4 done; pods 4/8 created, 3 scheduled, 2 running, 1 succeeded, 0 failed (3s)" +
		"\r\033[K[########################] runs 4/4 done; pods 8/8 created, 8 scheduled, 0 running, 8 succeeded, 0 failed (9s)\n"
	if buf.String() != want {
		t.Errorf("got  %q\nwant %q", buf.String(), want)
	}
	if iostreams.IsTerminal(&buf) {
		t.Error("a buffer is a terminal")
	}
}
