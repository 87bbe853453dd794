package bench

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/railyard-io/railyard/internal/benchrun"
	"github.com/railyard-io/railyard/internal/benchrun/benchruntest"
	"github.com/railyard-io/railyard/internal/cli/clitest"
	"github.com/railyard-io/railyard/internal/cli/iostreams"
)

const ncclTCPJob = "railyard-bench-nccl-tcp-podnet"

// runNCCLAndProbe plans nccl-tests and the probe pair (tcp-podnet) and
// runs the plan against the fake kubelet, with the fake MPI Operator when
// operator is set (no cluster, no operator here).
func runNCCLAndProbe(t *testing.T, operator bool, scripts map[string]benchruntest.Script, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	k := benchruntest.New(scripts)
	if operator {
		k.InstallMPIOperator(true)
	}
	k.Run(ctx, t)
	t.Cleanup(cancel)
	plan, _, err := run(t, "", "plan", "--image", "ghcr.io/railyard-io/railyard:0.1.0", "--nodes", "node-a,node-b",
		"--tests", "nccl,probe", "--variant", "tcp-podnet", "--gpus-per-node", "8")
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
	out, _, err := clitest.Run(t, newCmd, "", append([]string{"-f", path, "--poll-interval", "5ms"}, args...)...)
	cancel()
	return out, err
}

// TestRunCommandMPIJob: an nccl-tests MPIJob and a probe pair through the
// command: the MPIJob's launcher log (a saved nccl-tests run over IPoIB
// from an MPIJob) is parsed into the runs table and the report, the
// launcher's and workers' logs are saved.
func TestRunCommandMPIJob(t *testing.T) {
	outDir := filepath.Join(t.TempDir(), "report")
	launcher := benchruntest.LauncherPod(ncclTCPJob)
	data, err := os.ReadFile(vectorFile(t, "nccl-tests_all_reduce_perf_2node_16gpu_k8s_mpijob_ipoib_tcp__azure_aks-rdma-infiniband.txt"))
	if err != nil {
		t.Fatal(err)
	}
	out, err := runNCCLAndProbe(t, true, map[string]benchruntest.Script{
		launcher:    {RunPolls: 2, Log: string(data)},
		probeServer: {RunPolls: 1000},
		probeClient: {RunPolls: 2, Log: probeVectorLog(t)},
	}, "--out", outDir)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, want := range []string{
		ncclTCPJob + "   tcp-podnet  succeeded  nccl-tests: peak bus bandwidth 3.170 GB/s",
		"railyard-bench-probe-tcp-podnet  tcp-podnet  succeeded  railyard-tcp-probe: TCP bandwidth 25.502 Gb/s",
		"deleted the 4 objects the run created",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	for _, pod := range []string{launcher, benchruntest.WorkerPod(ncclTCPJob, 0), benchruntest.WorkerPod(ncclTCPJob, 1)} {
		if _, err := os.Stat(filepath.Join(outDir, "logs", pod+".log")); err != nil {
			t.Error(err)
		}
	}
}

// Without the MPI Operator the MPIJob's run fails saying so; the probe
// pair still runs and the command fails.
func TestRunCommandWithoutMPIOperator(t *testing.T) {
	out, err := runNCCLAndProbe(t, false, map[string]benchruntest.Script{
		probeServer: {RunPolls: 1000},
		probeClient: {RunPolls: 2, Log: probeVectorLog(t)},
	}, "--out", filepath.Join(t.TempDir(), "report"))
	if err == nil || !strings.Contains(err.Error(), "1 of 2 runs failed") {
		t.Errorf("err = %v", err)
	}
	for _, want := range []string{
		ncclTCPJob + "   tcp-podnet  failed     MPIJob default/" + ncclTCPJob + ": the cluster does not serve MPIJobs (kubeflow.org/v2beta1): install the MPI Operator",
		"railyard-bench-probe-tcp-podnet  tcp-podnet  succeeded",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}
