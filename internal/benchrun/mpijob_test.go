package benchrun_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/railyard-io/railyard/internal/bench"
	"github.com/railyard-io/railyard/internal/benchplan"
	"github.com/railyard-io/railyard/internal/benchrun"
	"github.com/railyard-io/railyard/internal/benchrun/benchruntest"
)

// The fake MPI Operator (benchruntest.InstallMPIOperator) stands in for
// the real one, which is not installed in unit tests: it creates an
// MPIJob's launcher and worker pods from its templates, sets its
// conditions, and deletes its pods when it is gone. Their logs are saved
// real outputs.

const (
	ncclJob       = "railyard-bench-nccl-rdma"
	ncclIBVector  = "nccl-tests_all_reduce_perf_2node_16gpu_k8s_mpijob_ib_sriov__azure_aks-rdma-infiniband.txt"
	ncclErrVector = "nccl-tests_2node_NCCL_WARN_NET_IB_completion_error_partial__nccl-tests-issue-252.txt"
	sshdLog       = "Server listening on 0.0.0.0 port 22.\n"
)

// vector is a saved real tool output without its # SOURCE: line.
func vector(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "bench", "testdata", "vectors", name))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, _ := bytes.Cut(data, []byte("\n"))
	return string(rest)
}

// ncclPlan is what bench plan prints for nccl-tests over RDMA on two
// nodes of 8 GPUs (one MPIJob), plus the given probe variants, read back
// with Load.
func ncclPlan(t *testing.T, probeVariants ...benchplan.Variant) benchrun.Plan {
	t.Helper()
	objs, err := benchplan.Objects(benchplan.Options{Image: "ghcr.io/railyard-io/railyard:0.1.0", Nodes: []string{"node-a", "node-b"},
		Tests: []benchplan.Test{benchplan.NCCLTests}, Variants: []benchplan.Variant{benchplan.RDMA}, GPUsPerNode: 8})
	if err != nil {
		t.Fatal(err)
	}
	if len(probeVariants) > 0 {
		probe, err := benchplan.Objects(benchplan.Options{Image: "ghcr.io/railyard-io/railyard:0.1.0", Nodes: []string{"node-a", "node-a"},
			Tests: []benchplan.Test{benchplan.TCPProbe}, Variants: probeVariants})
		if err != nil {
			t.Fatal(err)
		}
		objs = append(objs, probe...)
	}
	y, err := benchplan.YAML(objs)
	if err != nil {
		t.Fatal(err)
	}
	p, err := benchrun.Load(bytes.NewReader(y))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// mpiLeft counts the MPIJobs and pods left in the fake cluster.
func mpiLeft(t *testing.T, k *benchruntest.FakeKubelet) (jobs, pods int) {
	t.Helper()
	l, err := k.Dynamic.Resource(benchrun.MPIJobs).Namespace(metav1.NamespaceAll).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pods, _ = remaining(t, k)
	return len(l.Items), pods
}

// TestExecuteNCCLMPIJobWithFakeMPIOperator: bench run creates the
// MPIJob bench plan wrote through the dynamic client, follows its
// launcher pod until it succeeds, collects the launcher's and the
// workers' logs, parses the launcher's (a real nccl-tests run from an
// MPIJob, as is and with Open MPI's --tag-output prefixes) and deletes
// the MPIJob in the background, after which its pods go.
func TestExecuteNCCLMPIJobWithFakeMPIOperator(t *testing.T) {
	prefixed := "[1,0]<stdout>:" + strings.ReplaceAll(strings.TrimSuffix(vector(t, ncclIBVector), "\n"), "\n", "\n[1,0]<stdout>:") + "\n"
	for name, log := range map[string]string{"plain": vector(t, ncclIBVector), "tag-output": prefixed} {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			launcher := benchruntest.LauncherPod(ncclJob)
			k := benchruntest.New(map[string]benchruntest.Script{
				launcher:                           {RunPolls: 3, Log: log},
				benchruntest.WorkerPod(ncclJob, 0): {NeverExits: true, Log: sshdLog},
				benchruntest.WorkerPod(ncclJob, 1): {NeverExits: true, Log: sshdLog},
			})
			k.InstallMPIOperator(true)
			k.Run(ctx, t)
			var mu sync.Mutex
			var last benchrun.Progress
			out, err := benchrun.Execute(ctx, k.Cluster(), ncclPlan(t), benchrun.Options{Poll: 5 * time.Millisecond,
				Progress: func(p benchrun.Progress) { mu.Lock(); last = p; mu.Unlock() }})
			if err != nil {
				t.Fatal(err)
			}
			if len(out.Runs) != 1 || out.Failed() != 0 {
				t.Fatalf("runs %+v", out.Runs)
			}
			r := out.Runs[0]
			if r.Name != ncclJob || r.Test != "nccl" || r.Scenario != "rdma" || r.ResultPod != "default/"+launcher || r.Nodes != 2 {
				t.Errorf("run %s %s %s %s on %d nodes", r.Name, r.Test, r.Scenario, r.ResultPod, r.Nodes)
			}
			if l := out.Results(); len(l) != 1 || l[0].Nodes != 2 || l[0].Scenario != "rdma" || !l[0].Result.OK {
				t.Errorf("results %+v", l)
			}
			res := r.Result
			if !res.OK || res.Tool != bench.ToolNCCLTestsNoName || res.Summary[bench.SumAvgBusBWGBps] != 56.3994 ||
				res.Summary[bench.SumMaxBusBWGBps] != 187.22 || len(res.NCCL) != 16 || res.Source != "pod/default/"+launcher {
				t.Errorf("result %s ok=%v %q %v %d rows from %s", res.Tool, res.OK, res.Error, res.Summary, len(res.NCCL), res.Source)
			}
			if string(r.Logs[launcher]) != log || string(r.Logs[benchruntest.WorkerPod(ncclJob, 1)]) != sshdLog || len(r.Logs) != 3 {
				t.Errorf("logs of %d pods: %q", len(r.Logs), r.Logs)
			}
			if !slices.Equal(out.Created, []string{"mpijob/default/" + ncclJob}) || out.CleanupErr != nil || out.Kept {
				t.Errorf("created %v, cleanup %v", out.Created, out.CleanupErr)
			}
			if jobs, pods := mpiLeft(t, k); jobs != 0 || pods != 0 {
				t.Errorf("%d MPIJobs, %d pods left", jobs, pods)
			}
			if !deletedInBackground(k, ncclJob) {
				t.Error("the MPIJob was not deleted with propagationPolicy Background")
			}
			mu.Lock()
			defer mu.Unlock()
			if last.Runs != 1 || last.RunsDone != 1 || last.Pods != 3 || last.Created != 3 || last.Scheduled != 3 || last.Succeeded != 1 || last.Running != 2 {
				t.Errorf("last progress %+v", last)
			}
		})
	}
}

func deletedInBackground(k *benchruntest.FakeKubelet, job string) bool {
	for _, a := range k.Dynamic.(*dynamicfake.FakeDynamicClient).Actions() {
		d, ok := a.(clienttesting.DeleteAction)
		if ok && d.GetResource() == benchrun.MPIJobs && d.GetName() == job {
			p := d.GetDeleteOptions().PropagationPolicy
			return p != nil && *p == metav1.DeletePropagationBackground
		}
	}
	return false
}

// A launcher that exits non-zero fails the run with its exit code and the
// reason nccl-tests printed (a real failed run's output).
func TestExecuteMPIJobFailedLauncherIsReportedFailed(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	launcher := benchruntest.LauncherPod(ncclJob)
	k := benchruntest.New(map[string]benchruntest.Script{
		launcher:                           {RunPolls: 2, Exit: 1, Log: vector(t, ncclErrVector)},
		benchruntest.WorkerPod(ncclJob, 0): {NeverExits: true},
		benchruntest.WorkerPod(ncclJob, 1): {NeverExits: true},
	})
	k.InstallMPIOperator(true)
	k.Run(ctx, t)
	out, err := benchrun.Execute(ctx, k.Cluster(), ncclPlan(t), benchrun.Options{Poll: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	r := out.Runs[0]
	want := "launcher pod " + launcher + " failed: Failed, container launcher exit code 1 (Error)"
	if r.Status != benchrun.Failed || !strings.HasPrefix(r.Reason, want) ||
		!strings.Contains(r.Reason, "(Error); its output: kolyoz2:25146:25854 [0] ib_plugin.c:1105 NCCL WARN NET/IB : Got completion from peer 10.0.35.1<49189> with error 4, opcode 5327") {
		t.Errorf("%s %q\nwant prefix %q", r.Status, r.Reason, want)
	}
	if r.Result.OK || r.Result.Error != r.Reason || r.Result.Tool != bench.ToolNCCLTestsNoName || r.ResultPod != "default/"+launcher {
		t.Errorf("result %s ok=%v from %s", r.Result.Tool, r.Result.OK, r.ResultPod)
	}
	if jobs, pods := mpiLeft(t, k); jobs != 0 || pods != 0 || out.CleanupErr != nil {
		t.Errorf("%d MPIJobs, %d pods left; %v", jobs, pods, out.CleanupErr)
	}
}

// A cluster without the MPI Operator (discovery does not list mpijobs)
// fails the MPIJob run with an error naming the operator, creates
// nothing for it, and runs the plan's other runs: even though the MPIJob
// run comes first.
func TestExecuteWithoutMPIOperatorFailsOnlyTheMPIJobRuns(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	k := benchruntest.New(map[string]benchruntest.Script{server: {RunPolls: 1000}, client: {RunPolls: 2, Log: probeLog(t)}})
	k.Run(ctx, t)
	out, err := benchrun.Execute(ctx, k.Cluster(), ncclPlan(t, benchplan.TCPPodNetwork), benchrun.Options{Poll: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Runs) != 2 || out.Failed() != 1 {
		t.Fatalf("runs %+v", out.Runs)
	}
	nccl, probe := out.Runs[0], out.Runs[1]
	want := "MPIJob default/" + ncclJob + ": the cluster does not serve MPIJobs (kubeflow.org/v2beta1): install the MPI Operator"
	if nccl.Name != ncclJob || nccl.Status != benchrun.Failed || !strings.HasPrefix(nccl.Reason, want) || nccl.Result.OK || nccl.ResultPod != "" ||
		nccl.Result.Source != "mpijob/default/"+ncclJob {
		t.Errorf("%s %s %q from %q", nccl.Name, nccl.Status, nccl.Reason, nccl.Result.Source)
	}
	if probe.Status != benchrun.Succeeded || !probe.Result.OK {
		t.Errorf("probe: %s %q", probe.Status, probe.Reason)
	}
	if len(out.Created) != 3 || slices.ContainsFunc(out.Created, func(s string) bool { return strings.HasPrefix(s, "mpijob/") }) {
		t.Errorf("created %v", out.Created)
	}
}

// With the CRD but no operator running, nothing happens to the MPIJob:
// the run times out saying the MPIJob has no status, and is deleted.
func TestExecuteMPIJobWithoutControllerTimesOut(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	k := benchruntest.New(nil)
	k.InstallMPIOperator(false)
	k.Run(ctx, t)
	out, err := benchrun.Execute(ctx, k.Cluster(), ncclPlan(t), benchrun.Options{Poll: 5 * time.Millisecond, Timeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	r := out.Runs[0]
	want := "timed out after 200ms while waiting for MPIJob " + ncclJob +
		" (no status yet: is the MPI Operator's controller running?); no launcher pod; 0 of 2 worker pods"
	if r.Status != benchrun.TimedOut || r.Reason != want || r.Result.Tool != "nccl" {
		t.Errorf("%s %q\nwant %q", r.Status, r.Reason, want)
	}
	if jobs, pods := mpiLeft(t, k); jobs != 0 || pods != 0 || out.CleanupErr != nil || len(out.Created) != 1 {
		t.Errorf("%d MPIJobs, %d pods left; created %v; %v", jobs, pods, out.Created, out.CleanupErr)
	}
}

// Ctrl-C while the MPIJob runs: the run is interrupted, saying what its
// pods were doing; the MPIJob is deleted and its pods then go (the
// garbage collector's work, done here by the fake operator).
func TestExecuteMPIJobInterruptedCleansUp(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// Every pod runs until interrupted: workers that exit at once (the
	// default script) could end before any poll saw all three running,
	// and a loaded machine made that happen (the run then waited out the
	// 30s context).
	k := benchruntest.New(map[string]benchruntest.Script{benchruntest.LauncherPod(ncclJob): {NeverExits: true},
		benchruntest.WorkerPod(ncclJob, 0): {NeverExits: true}, benchruntest.WorkerPod(ncclJob, 1): {NeverExits: true}})
	k.InstallMPIOperator(true)
	k.Run(ctx, t)
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	out, err := benchrun.Execute(runCtx, k.Cluster(), ncclPlan(t), benchrun.Options{Poll: 5 * time.Millisecond,
		Progress: func(p benchrun.Progress) {
			if p.Running == 3 {
				stop()
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	r := out.Runs[0]
	// The Running condition may come after the poll that saw 3 pods running.
	prefix := "interrupted while waiting for MPIJob " + ncclJob + " (conditions Created=True (MPIJobCreated: MPIJob default/" + ncclJob + " is created.)"
	suffix := "); launcher pod " + benchruntest.LauncherPod(ncclJob) + " Running; 2 of 2 worker pods, 2 Running"
	if !out.Interrupted || r.Status != benchrun.Interrupted || !strings.HasPrefix(r.Reason, prefix) || !strings.HasSuffix(r.Reason, suffix) {
		t.Errorf("%v %s %q\nwant %q...%q", out.Interrupted, r.Status, r.Reason, prefix, suffix)
	}
	if out.CleanupErr != nil {
		t.Fatal(out.CleanupErr)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		jobs, pods := mpiLeft(t, k)
		if jobs == 0 && pods == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d MPIJobs, %d pods left", jobs, pods)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// --keep leaves the MPIJob and its pods.
func TestExecuteMPIJobKeep(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	k := benchruntest.New(map[string]benchruntest.Script{benchruntest.LauncherPod(ncclJob): {RunPolls: 1, Log: vector(t, ncclIBVector)}})
	k.InstallMPIOperator(true)
	k.Run(ctx, t)
	out, err := benchrun.Execute(ctx, k.Cluster(), ncclPlan(t), benchrun.Options{Poll: 5 * time.Millisecond, Keep: true})
	if err != nil || out.Failed() != 0 || !out.Kept {
		t.Fatalf("%v %+v", err, out)
	}
	if jobs, pods := mpiLeft(t, k); jobs != 1 || pods != 3 {
		t.Errorf("%d MPIJobs, %d pods left, want the MPIJob and its 3 pods kept", jobs, pods)
	}
}

// setStatus waits for the MPIJob and gives it one True condition, as the
// operator does (here no controller runs).
func setStatus(ctx context.Context, t *testing.T, k *benchruntest.FakeKubelet, typ, reason, msg string) {
	t.Helper()
	jobs := k.Dynamic.Resource(benchrun.MPIJobs).Namespace("default")
	for ctx.Err() == nil {
		job, err := jobs.Get(ctx, ncclJob, metav1.GetOptions{})
		if err != nil {
			time.Sleep(2 * time.Millisecond)
			continue
		}
		job.Object["status"] = map[string]any{"conditions": []any{map[string]any{"type": typ, "status": "True", "reason": reason, "message": msg}}}
		if _, err := jobs.UpdateStatus(ctx, job, metav1.UpdateOptions{}); err != nil {
			t.Error(err)
		}
		return
	}
}

// The MPIJob's own conditions end a run even with no launcher pod seen: a
// Failed condition fails it with the operator's reason; a Succeeded one
// with no launcher to read is a failed run too (no result), never a
// silent success.
func TestExecuteMPIJobConditions(t *testing.T) {
	for _, tc := range []struct{ typ, reason, msg, want string }{
		{"Failed", "BackoffLimitExceeded", "Job has reached the specified backoff limit",
			"MPIJob " + ncclJob + " failed: Failed=True (BackoffLimitExceeded: Job has reached the specified backoff limit); no launcher pod; 0 of 2 worker pods"},
		{"Succeeded", "MPIJobSucceeded", "done", "MPIJob " + ncclJob + " succeeded but its launcher pod was never seen"},
	} {
		t.Run(tc.typ, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			k := benchruntest.New(nil)
			k.InstallMPIOperator(false)
			k.Run(ctx, t)
			done := make(chan struct{})
			go func() { defer close(done); setStatus(ctx, t, k, tc.typ, tc.reason, tc.msg) }()
			out, err := benchrun.Execute(ctx, k.Cluster(), ncclPlan(t), benchrun.Options{Poll: 5 * time.Millisecond})
			<-done
			if err != nil {
				t.Fatal(err)
			}
			r := out.Runs[0]
			if r.Status != benchrun.Failed || r.Reason != tc.want || r.Result.OK || r.Result.Source != "mpijob/default/"+ncclJob {
				t.Errorf("%s %q from %s\nwant %q", r.Status, r.Reason, r.Result.Source, tc.want)
			}
			if jobs, _ := mpiLeft(t, k); jobs != 0 {
				t.Errorf("%d MPIJobs left", jobs)
			}
		})
	}
}
