package benchrun_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/railyard-io/railyard/internal/bench"
	"github.com/railyard-io/railyard/internal/benchplan"
	"github.com/railyard-io/railyard/internal/benchrun"
	"github.com/railyard-io/railyard/internal/benchrun/benchruntest"
)

const probeVector = "railyard-tcp-probe_loopback_2streams_3s__railyard.txt"

// probeLog is a saved real run of the probe (the client's whole output).
func probeLog(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "bench", "testdata", "vectors", probeVector))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, _ := bytes.Cut(data, []byte("\n")) // the # SOURCE: line
	return string(rest)
}

func probePlan(t *testing.T, variants ...benchplan.Variant) benchrun.Plan {
	t.Helper()
	objs, err := benchplan.Objects(benchplan.Options{Image: "ghcr.io/railyard-io/railyard:0.1.0", Nodes: []string{"node-a", "node-a"},
		Tests: []benchplan.Test{benchplan.TCPProbe}, Variants: variants})
	if err != nil {
		t.Fatal(err)
	}
	p, err := benchrun.FromObjects(objs)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func remaining(t *testing.T, k *benchruntest.FakeKubelet) (pods, services int) {
	t.Helper()
	ctx := context.Background()
	pl, err := k.Client.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sl, err := k.Client.CoreV1().Services(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return len(pl.Items), len(sl.Items)
}

const (
	server = "railyard-bench-probe-server-tcp-podnet"
	client = "railyard-bench-probe-client-tcp-podnet"
)

// TestExecuteProbeRunWithFakeClientset: apply, wait, collect, parse and
// clean up a probe run against client-go's fake clientset with a fake
// kubelet: the client is created only once the server has an IP, and
// connects to that IP; the result is the probe's TCP measurement; nothing
// is left behind.
func TestExecuteProbeRunWithFakeClientset(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	k := benchruntest.New(map[string]benchruntest.Script{
		server: {NeverExits: false, RunPolls: 30, Log: "railyard tcp probe: listening on [::]:5201\n"},
		client: {RunPolls: 3, Log: probeLog(t)},
	})
	k.Run(ctx, t)
	var mu sync.Mutex
	var last benchrun.Progress
	out, err := benchrun.Execute(ctx, k.Cluster(), probePlan(t, benchplan.TCPPodNetwork), benchrun.Options{Poll: 5 * time.Millisecond,
		Progress: func(p benchrun.Progress) { mu.Lock(); last = p; mu.Unlock() }})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Runs) != 1 || out.Failed() != 0 {
		t.Fatalf("runs %+v", out.Runs)
	}
	r := out.Runs[0]
	if r.Status != benchrun.Succeeded || r.Scenario != "tcp-podnet" || r.Test != "probe" || r.ResultPod != "default/"+client {
		t.Errorf("run %s %s %s %s: %s", r.Status, r.Scenario, r.Test, r.ResultPod, r.Reason)
	}
	res := r.Result
	if !res.OK || res.Tool != bench.ToolTCPProbe || res.Summary[bench.SumReceivedGbps] != 25.50195981 || res.Source != "pod/default/"+client {
		t.Errorf("result %s ok=%v %q %v from %s", res.Tool, res.OK, res.Error, res.Summary, res.Source)
	}
	if string(r.Logs[server]) != "railyard tcp probe: listening on [::]:5201\n" || len(r.Logs[client]) == 0 {
		t.Errorf("logs: %q", r.Logs)
	}
	// The client was created with the server pod's IP (no DNS needed).
	c := k.FirstSeen(client)
	if c == nil || len(c.Spec.Containers[0].Env) != 1 || c.Spec.Containers[0].Env[0].Value != "10.217.0.1" {
		t.Fatalf("client as created: %+v", c)
	}
	if len(out.Created) != 3 || out.Kept || out.CleanupErr != nil {
		t.Errorf("created %v kept %v cleanup %v", out.Created, out.Kept, out.CleanupErr)
	}
	if pods, svcs := remaining(t, k); pods != 0 || svcs != 0 {
		t.Errorf("%d pods and %d services left", pods, svcs)
	}
	mu.Lock()
	defer mu.Unlock()
	if last.Runs != 1 || last.RunsDone != 1 || last.Pods != 2 || last.Created != 2 || last.Scheduled != 2 || last.Succeeded != 1 {
		t.Errorf("last progress %+v", last)
	}
	if got := out.Results(); len(got) != 1 || got[0].Scenario != "tcp-podnet" || !got[0].Result.OK {
		t.Errorf("results %+v", got)
	}
}

// A run whose pod fails is a failed result with the pod's exit code and
// the probe's own error; the other run of the plan still succeeds.
func TestExecuteFailedPodIsReportedFailed(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	failedReport := `{"start":{"version":"railyard-tcp-probe/1"},"intervals":[],"end":{},"error":"tcp probe client: connect to 10.217.0.9:5201: 3 attempts in 3s: connection refused"}` + "\n"
	k := benchruntest.New(map[string]benchruntest.Script{
		server:                            {RunPolls: 1000},
		client:                            {RunPolls: 2, Exit: 1, Log: failedReport},
		"railyard-bench-probe-server-tcp": {RunPolls: 1000},
		"railyard-bench-probe-client-tcp": {RunPolls: 2, Log: probeLog(t)},
	})
	k.Run(ctx, t)
	out, err := benchrun.Execute(ctx, k.Cluster(), probePlan(t, benchplan.TCP, benchplan.TCPPodNetwork), benchrun.Options{Poll: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Runs) != 2 || out.Failed() != 1 {
		t.Fatalf("runs %+v", out.Runs)
	}
	byScenario := map[string]benchrun.RunOutcome{}
	for _, r := range out.Runs {
		byScenario[r.Scenario] = r
	}
	bad, good := byScenario["tcp-podnet"], byScenario["tcp"]
	if good.Status != benchrun.Succeeded || !good.Result.OK {
		t.Errorf("tcp run: %s %s", good.Status, good.Reason)
	}
	want := "pod " + client + " failed: Failed, container probe exit code 1 (Error); its output: tcp probe client: connect to 10.217.0.9:5201"
	if bad.Status != benchrun.Failed || !strings.HasPrefix(bad.Reason, want) || bad.Result.OK || bad.Result.Error != bad.Reason || bad.Result.Tool != bench.ToolTCPProbe {
		t.Errorf("tcp-podnet run: %s %q\n want reason %q; result %s ok=%v", bad.Status, bad.Reason, want, bad.Result.Tool, bad.Result.OK)
	}
	// The report shows it: the run check fails for that scenario.
	vs := bench.Judge(bench.JudgeInput{Results: out.Results()})
	failed := 0
	for _, v := range vs {
		if v.Check == bench.CheckRun && v.Status == bench.StatusFail && v.Scenario == "tcp-podnet" {
			failed++
		}
	}
	if failed != 1 {
		t.Errorf("verdicts %+v", vs)
	}
	if pods, svcs := remaining(t, k); pods != 0 || svcs != 0 {
		t.Errorf("%d pods and %d services left", pods, svcs)
	}
}

// A run that cannot finish times out, says what it waited for, and its
// objects are deleted.
func TestExecuteTimeoutCleansUp(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	k := benchruntest.New(map[string]benchruntest.Script{server: {Unschedulable: true}})
	k.Run(ctx, t)
	start := time.Now()
	out, err := benchrun.Execute(ctx, k.Cluster(), probePlan(t, benchplan.TCPPodNetwork), benchrun.Options{Poll: 5 * time.Millisecond, Timeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("took %v", d)
	}
	r := out.Runs[0]
	for _, want := range []string{"timed out after 300ms while waiting for pod " + server + " Pending (Unschedulable: 0/1 nodes are available",
		"pod " + client + " not created (waiting for its server's IP)"} {
		if r.Status != benchrun.TimedOut || !strings.Contains(r.Reason, want) {
			t.Errorf("%s %q lacks %q", r.Status, r.Reason, want)
		}
	}
	if r.Result.OK || r.Result.Tool != "probe" {
		t.Errorf("result %s ok=%v", r.Result.Tool, r.Result.OK)
	}
	if pods, svcs := remaining(t, k); pods != 0 || svcs != 0 || len(out.Created) != 2 || out.CleanupErr != nil {
		t.Errorf("%d pods, %d services left; created %v; %v", pods, svcs, out.Created, out.CleanupErr)
	}
}

// Cancelling the context (Ctrl-C) stops the wait at once, marks the runs
// interrupted and still deletes what was created.
func TestExecuteInterruptedCleansUp(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	k := benchruntest.New(map[string]benchruntest.Script{server: {NeverExits: true}, client: {NeverExits: true}})
	k.Run(ctx, t)
	runCtx, stop := context.WithCancel(ctx)
	created := make(chan struct{})
	var once sync.Once
	out, err := benchrun.Execute(runCtx, k.Cluster(), probePlan(t, benchplan.TCPPodNetwork), benchrun.Options{Poll: 5 * time.Millisecond,
		Progress: func(p benchrun.Progress) {
			if p.Created == 2 && p.Running == 2 {
				once.Do(func() { close(created); stop() })
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	<-created
	if !out.Interrupted || out.Runs[0].Status != benchrun.Interrupted || !strings.Contains(out.Runs[0].Reason, "interrupted while waiting for pod "+server+" Running") {
		t.Errorf("%v %s %q", out.Interrupted, out.Runs[0].Status, out.Runs[0].Reason)
	}
	if pods, svcs := remaining(t, k); pods != 0 || svcs != 0 || out.CleanupErr != nil {
		t.Errorf("%d pods, %d services left; %v", pods, svcs, out.CleanupErr)
	}
}

// --keep leaves every object in place.
func TestExecuteKeep(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	k := benchruntest.New(map[string]benchruntest.Script{server: {RunPolls: 1000}, client: {RunPolls: 1, Log: probeLog(t)}})
	k.Run(ctx, t)
	out, err := benchrun.Execute(ctx, k.Cluster(), probePlan(t, benchplan.TCPPodNetwork), benchrun.Options{Poll: 5 * time.Millisecond, Keep: true})
	if err != nil || out.Failed() != 0 || !out.Kept {
		t.Fatalf("%v %+v", err, out)
	}
	if pods, svcs := remaining(t, k); pods != 2 || svcs != 1 {
		t.Errorf("%d pods, %d services left, want all 3 objects kept", pods, svcs)
	}
}

// An object of the plan that exists already (an earlier --keep run) stops
// the plan before anything runs, and what this run created is deleted.
func TestExecuteExistingObjectStopsThePlan(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	k := benchruntest.New(nil)
	pre := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "railyard-bench-probe-server-tcp-podnet"}}
	if _, err := k.Client.CoreV1().Pods("default").Create(ctx, pre, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	out, err := benchrun.Execute(ctx, k.Cluster(), probePlan(t, benchplan.TCPPodNetwork), benchrun.Options{Poll: 5 * time.Millisecond})
	if err == nil || !strings.Contains(err.Error(), "Pod default/"+server+" exists already") {
		t.Fatalf("err = %v", err)
	}
	if pods, svcs := remaining(t, k); pods != 1 || svcs != 0 || len(out.Created) != 1 {
		t.Errorf("%d pods (want only the one there before), %d services; created %v", pods, svcs, out.Created)
	}
}

// errCluster fails every call after the first n creates.
type errCluster struct {
	benchrun.Cluster
	n int
}

func (e *errCluster) CreatePod(ctx context.Context, p *corev1.Pod) error {
	if e.n <= 0 {
		return errors.New("admission webhook denied the request")
	}
	e.n--
	return e.Cluster.CreatePod(ctx, p)
}

// A pod the API server refuses fails its run, not the plan.
func TestExecuteRefusedPodFailsItsRunOnly(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	k := benchruntest.New(map[string]benchruntest.Script{server: {RunPolls: 1000}, "railyard-bench-probe-server-tcp": {RunPolls: 1000}})
	k.Run(ctx, t)
	c := &errCluster{Cluster: k.Cluster(), n: 1} // the first server only
	out, err := benchrun.Execute(ctx, c, probePlan(t, benchplan.TCP, benchplan.TCPPodNetwork), benchrun.Options{Poll: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if out.Failed() != 2 {
		t.Fatalf("runs %+v", out.Runs)
	}
	for _, r := range out.Runs {
		if !strings.Contains(r.Reason, "admission webhook denied the request") {
			t.Errorf("%s: %q", r.Name, r.Reason)
		}
	}
	if pods, svcs := remaining(t, k); pods != 0 || svcs != 0 {
		t.Errorf("%d pods and %d services left", pods, svcs)
	}
}

// A plan whose rail is delivered by DRA (bench plan --device-class): bench
// run creates the run's ResourceClaimTemplate before its pods (the fake
// kubelet, standing in for the resourceclaim controller too, schedules a
// pod only once its claim can be made from the template), sends the client
// to the address the server's claim records in its status.devices
// networkData, not to the pod IP, and deletes the template with the pods.
func TestExecuteDRARailReachesTheClaimsAddress(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const (
		server = "railyard-bench-probe-server-tcp"
		client = "railyard-bench-probe-client-tcp"
	)
	k := benchruntest.New(map[string]benchruntest.Script{
		server: {RunPolls: 30, ClaimIP: "10.60.0.7/24"},
		client: {RunPolls: 3, Log: probeLog(t), ClaimIP: "10.60.0.8/24"},
	})
	k.Run(ctx, t)
	objs, err := benchplan.Objects(benchplan.Options{Image: "ghcr.io/railyard-io/railyard:0.1.0", Nodes: []string{"node-a", "node-a"},
		Tests: []benchplan.Test{benchplan.TCPProbe}, Variants: []benchplan.Variant{benchplan.TCP},
		Rails: []benchplan.Rail{{DeviceClass: "rail0.rdma.railyard.io"}}})
	if err != nil {
		t.Fatal(err)
	}
	plan, err := benchplan.YAML(objs) // as bench plan prints it
	if err != nil {
		t.Fatal(err)
	}
	p, err := benchrun.Load(bytes.NewReader(plan))
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Runs) != 1 || len(p.Runs[0].ClaimTemplates) != 1 {
		t.Fatalf("runs %+v", p.Runs)
	}
	out, err := benchrun.Execute(ctx, k.Cluster(), p, benchrun.Options{Poll: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Runs) != 1 || out.Runs[0].Status != benchrun.Succeeded {
		t.Fatalf("runs %+v", out.Runs)
	}
	r := out.Runs[0]
	if want := "the server's 10.60.0.7 on eth1 (device nic0 of its claim " + server + "-rails, from the claim's status.devices networkData)"; r.ServerVia != want {
		t.Errorf("server via %q, want %q", r.ServerVia, want)
	}
	if c := k.FirstSeen(client); c == nil || c.Spec.Containers[0].Env[0].Value != "10.60.0.7" {
		t.Fatalf("client as created: %+v", c)
	}
	tmpl := "resourceclaimtemplate/default/" + benchplan.ClaimTemplateName("railyard-bench-probe-tcp")
	if len(out.Created) != 4 || out.Created[0] != tmpl || out.CleanupErr != nil {
		t.Errorf("created %v (want %s first), cleanup %v", out.Created, tmpl, out.CleanupErr)
	}
	if l, err := k.Client.ResourceV1().ResourceClaimTemplates("default").List(ctx, metav1.ListOptions{}); err != nil || len(l.Items) != 0 {
		t.Errorf("templates left: %v %v", l, err)
	}
}
