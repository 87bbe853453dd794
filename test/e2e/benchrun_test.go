//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/railyard-io/railyard/internal/benchplan"
	"github.com/railyard-io/railyard/test/e2e/framework"
)

// benchRunImage is Railyard's image as `make images` builds it, imported
// into the node's containerd: the probe pods run the railyard binary in it.
const benchRunImage = installRepo + ":0.0.0-benchrun"

// TestBenchRun runs `railyard bench run` (the real binary, as a user
// would, with the cluster's kubeconfig) on the real cluster, with plans
// whose workload is Railyard's own TCP probe between two pods, running
// from Railyard's image (built with internal/image and imported with ctr,
// as TestInstallChartRunsAgentAsDaemonSetPod does). The pods are on the
// pod network (variant tcp-podnet): this cluster has no RDMA, no secondary
// network and no DNS; the measurement is TCP over the node's bridge and is
// reported as such.
func TestBenchRun(t *testing.T) {
	c := suite.Cluster(t)
	ctx := framework.Context(t, 15*time.Minute)
	repo, err := framework.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	bin, err := c.ProjectBin("railyard")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	buildAndImport(ctx, t, c, repo, dir, "0.0.0-benchrun")

	// apply -> wait -> collect -> parse -> report -> clean up.
	t.Run("probe", func(t *testing.T) {
		plan := writePlan(t, c, dir, "ok", nil)
		out := filepath.Join(dir, "report-ok")
		start := time.Now()
		stdout, stderr, err := railyard(ctx, bin, "bench", "run", "-f", plan, "--kubeconfig", c.Kubeconfig, "--timeout", "3m", "--out", out)
		t.Logf("bench run took %v\n%s\n%s", time.Since(start).Round(time.Millisecond), stdout, stderr)
		if err != nil {
			t.Fatalf("bench run: %v", err)
		}
		if !strings.Contains(stdout, "railyard-bench-probe-tcp-podnet  tcp-podnet  succeeded  railyard-tcp-probe: TCP bandwidth") ||
			!strings.Contains(stdout, "deleted the 3 objects the run created") {
			t.Errorf("runs table:\n%s", stdout)
		}
		if !strings.Contains(stderr, "runs 1/1 done") {
			t.Errorf("no progress lines:\n%s", stderr)
		}
		res := reportResults(t, out)
		if len(res) != 1 {
			t.Fatalf("%d results, want 1", len(res))
		}
		r := res[0]
		gbps := r.Result.Summary["received_gbps"]
		if r.Scenario != "tcp-podnet" || r.Result.Tool != "railyard-tcp-probe" || !r.Result.OK || !(gbps > 0) ||
			r.Result.Source != "pod/default/railyard-bench-probe-client-tcp-podnet" || len(r.Result.Rows) < 3 {
			t.Errorf("result %+v", r)
		}
		t.Logf("TCP probe between two pods over the node's bridge: %.3f Gb/s received (%.3f sent), %d rows", gbps, r.Result.Summary["sent_gbps"], len(r.Result.Rows))
		for _, f := range []string{"report.html", "report.json", "logs/railyard-bench-probe-client-tcp-podnet.log", "logs/railyard-bench-probe-server-tcp-podnet.log"} {
			if st, err := os.Stat(filepath.Join(out, f)); err != nil || st.Size() == 0 {
				t.Errorf("%s: %v", f, err)
			}
		}
		server, _ := os.ReadFile(filepath.Join(out, "logs/railyard-bench-probe-server-tcp-podnet.log"))
		if !bytes.Contains(server, []byte("railyard tcp probe: received")) {
			t.Errorf("server log: %s", server)
		}
		requireNoBenchObjects(ctx, t, c)
	})

	// A client that cannot reach its server fails: the run is reported as
	// failed with the pod's exit code and the probe's error, the command
	// fails, the report has the failed run, nothing is left.
	t.Run("failed-pod", func(t *testing.T) {
		plan := writePlan(t, c, dir, "fail", func(client, _ *corev1.Pod) {
			cmd := client.Spec.Containers[0].Command
			cmd[slices.Index(cmd, "--port")+1] = "5999" // nothing listens there
			cmd[slices.Index(cmd, "--wait")+1] = "3s"
		})
		out := filepath.Join(dir, "report-fail")
		stdout, stderr, err := railyard(ctx, bin, "bench", "run", "-f", plan, "--kubeconfig", c.Kubeconfig, "--timeout", "3m", "--out", out)
		t.Logf("%s\n%s", stdout, stderr)
		if exitCode(err) != 1 || !strings.Contains(stderr, "1 of 1 runs failed") {
			t.Errorf("exit %d (%v), want 1 with a failed run", exitCode(err), err)
		}
		for _, want := range []string{"tcp-podnet  failed  pod railyard-bench-probe-client-tcp-podnet failed: Failed, container probe exit code 1 (Error)",
			"connect to 10.", ":5999", "FAIL    run"} {
			if !strings.Contains(stdout, want) {
				t.Errorf("output lacks %q", want)
			}
		}
		res := reportResults(t, out)
		if len(res) != 1 || res[0].Result.OK || !strings.Contains(res[0].Result.Error, "exit code 1") {
			t.Errorf("report results %+v", res)
		}
		requireNoBenchObjects(ctx, t, c)
	})

	// A run that cannot be scheduled times out; its objects are deleted.
	t.Run("timeout", func(t *testing.T) {
		plan := writePlan(t, c, dir, "timeout", func(_, server *corev1.Pod) {
			server.Spec.NodeSelector[corev1.LabelHostname] = "no-such-node"
		})
		start := time.Now()
		stdout, stderr, err := railyard(ctx, bin, "bench", "run", "-f", plan, "--kubeconfig", c.Kubeconfig, "--timeout", "5s", "--out", filepath.Join(dir, "report-timeout"))
		t.Logf("%s\n%s", stdout, stderr)
		if exitCode(err) != 1 || time.Since(start) > time.Minute {
			t.Errorf("exit %d (%v) after %v", exitCode(err), err, time.Since(start))
		}
		if !strings.Contains(stdout, "timed-out  timed out after 5s while waiting for pod railyard-bench-probe-server-tcp-podnet Pending (Unschedulable") {
			t.Errorf("runs table:\n%s", stdout)
		}
		requireNoBenchObjects(ctx, t, c)
	})

	// SIGTERM (as Ctrl-C's SIGINT) in the middle of a run: the command
	// deletes what it created and exits 130 within cli.Grace.
	t.Run("sigterm", func(t *testing.T) {
		plan := writePlan(t, c, dir, "sigterm", func(client, _ *corev1.Pod) {
			cmd := client.Spec.Containers[0].Command
			cmd[slices.Index(cmd, "--duration")+1] = "10m"
		})
		cmd := exec.CommandContext(ctx, bin, "bench", "run", "-f", plan, "--kubeconfig", c.Kubeconfig, "--out", filepath.Join(dir, "report-sigterm"))
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		waitBenchPodsRunning(ctx, t, c, 2)
		signalled := time.Now()
		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		err := cmd.Wait()
		t.Logf("exited %v after SIGTERM: %v\n%s\n%s", time.Since(signalled).Round(time.Millisecond), err, stdout.String(), stderr.String())
		if exitCode(err) != 130 || time.Since(signalled) > 5*time.Second {
			t.Errorf("exit %d after %v, want 130 within cli.Grace", exitCode(err), time.Since(signalled))
		}
		if !strings.Contains(stdout.String(), "interrupted  interrupted while waiting for pod") {
			t.Errorf("runs table:\n%s", stdout.String())
		}
		requireNoBenchObjects(ctx, t, c)
	})
}

// writePlan writes a tcp-podnet probe plan on the cluster's node (server
// and client on the one node), 3 s of sending, after edit.
func writePlan(t *testing.T, c *framework.Cluster, dir, name string, edit func(client, server *corev1.Pod)) string {
	t.Helper()
	objs, err := benchplan.Objects(benchplan.Options{Image: benchRunImage, Nodes: []string{c.NodeName, c.NodeName},
		Tests: []benchplan.Test{benchplan.TCPProbe}, Variants: []benchplan.Variant{benchplan.TCPPodNetwork}, ProbeDuration: "3s"})
	if err != nil {
		t.Fatal(err)
	}
	var client, server *corev1.Pod
	for _, o := range objs {
		if p, ok := o.(*corev1.Pod); ok {
			if p.Annotations[benchplan.AnnotationResult] == "true" {
				client = p
			} else {
				server = p
			}
		}
	}
	if edit != nil {
		edit(client, server)
	}
	y, err := benchplan.YAML(objs)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "plan-"+name+".yaml")
	if err := os.WriteFile(path, y, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func railyard(ctx context.Context, bin string, args ...string) (string, string, error) {
	cmd := exec.CommandContext(ctx, bin, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return stdout.String(), stderr.String(), err
}

func exitCode(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}

type reportResult struct {
	Scenario string `json:"scenario"`
	Result   struct {
		Tool    string             `json:"tool"`
		OK      bool               `json:"ok"`
		Error   string             `json:"error"`
		Source  string             `json:"source"`
		Rows    []json.RawMessage  `json:"rows"`
		Summary map[string]float64 `json:"summary"`
	} `json:"result"`
}

func reportResults(t *testing.T, dir string) []reportResult {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Results []reportResult `json:"results"`
	}
	if err := json.Unmarshal(data, &rep); err != nil {
		t.Fatal(err)
	}
	return rep.Results
}

// requireNoBenchObjects: every pod and Service of a bench run is gone
// (pods may take their 1 s grace period; a run deletes and waits, an
// interrupted one only deletes).
func requireNoBenchObjects(ctx context.Context, t *testing.T, c *framework.Cluster) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		pods, err := c.Client.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{LabelSelector: benchplan.LabelRun})
		if err != nil {
			t.Fatal(err)
		}
		svcs, err := c.Client.CoreV1().Services(metav1.NamespaceAll).List(ctx, metav1.ListOptions{LabelSelector: benchplan.LabelRun})
		if err != nil {
			t.Fatal(err)
		}
		if len(pods.Items)+len(svcs.Items) == 0 {
			return
		}
		if time.Now().After(deadline) {
			var names []string
			for _, p := range pods.Items {
				names = append(names, "pod/"+p.Name)
			}
			for _, s := range svcs.Items {
				names = append(names, "service/"+s.Name)
			}
			t.Fatalf("left behind: %v", names)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func waitBenchPodsRunning(ctx context.Context, t *testing.T, c *framework.Cluster, n int) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		pods, err := c.Client.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{LabelSelector: benchplan.LabelRun})
		if err != nil {
			t.Fatal(err)
		}
		running := 0
		for _, p := range pods.Items {
			if p.Status.Phase == corev1.PodRunning {
				running++
			}
		}
		if running == n {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("%d bench pods not running within 2 minutes", n)
}

// TestBenchRunGPUDirectPlanPassesServerDryRun: the GPUDirect pairs that
// `railyard bench plan --tests gpudirect` chooses from a built-in model
// (no GPUs here to run them) are accepted by the real apiserver with a
// server-side dry run: pods taking every GPU and the rail, the scenario
// labels and the wait annotation intact.
func TestBenchRunGPUDirectPlanPassesServerDryRun(t *testing.T) {
	c := suite.Cluster(t)
	ctx := framework.Context(t, time.Minute)
	bin, err := c.ProjectBin("railyard")
	if err != nil {
		t.Fatal(err)
	}
	out, stderr, err := railyard(ctx, bin, "bench", "plan", "--image", framework.BusyboxImage, "--nodes", c.NodeName+","+c.NodeName,
		"--tests", "gpudirect", "--variant", "rdma", "--machine", "roce-8gpu-4nic")
	if err != nil {
		t.Fatalf("bench plan: %v\n%s", err, stderr)
	}
	if !strings.Contains(stderr, "near mlx5_0 0000:05:00.0 (PIX), far mlx5_2 0000:84:00.0 (SYS)") {
		t.Errorf("choice: %s", stderr)
	}
	objs, err := framework.DecodeObjects([]byte(out))
	if err != nil {
		t.Fatal(err)
	}
	results, err := c.DryRunApply(ctx, objs)
	if err != nil {
		t.Fatalf("server dry run rejected the plan: %v", err)
	}
	pods := 0
	for i, r := range results {
		if objs[i].GetKind() != "Pod" {
			continue
		}
		pods++
		labels, annotations := r.Object.GetLabels(), r.Object.GetAnnotations()
		scenario := labels[benchplan.LabelScenario]
		if (scenario != benchplan.ScenarioGPUDirectNear && scenario != benchplan.ScenarioGPUDirectFar) ||
			(scenario == benchplan.ScenarioGPUDirectFar) != (annotations[benchplan.AnnotationAfterRun] == "railyard-bench-gdr-near-perftest-rdma") {
			t.Errorf("pod %s: labels %v annotations %v", r.Object.GetName(), labels, annotations)
		}
		limits, _, _ := unstructuredLimits(r.Object.Object)
		if limits["nvidia.com/gpu"] != "8" || limits[benchplan.DefaultResource] != "1" {
			t.Errorf("pod %s: limits %v", r.Object.GetName(), limits)
		}
	}
	if pods != 4 {
		t.Errorf("%d pods, want 4 (near and far pairs)", pods)
	}
}

func unstructuredLimits(obj map[string]any) (map[string]string, bool, error) {
	cs, _, err := unstructured.NestedSlice(obj, "spec", "containers")
	if err != nil || len(cs) == 0 {
		return nil, false, err
	}
	m, ok := cs[0].(map[string]any)
	if !ok {
		return nil, false, nil
	}
	return unstructured.NestedStringMap(m, "resources", "limits")
}
