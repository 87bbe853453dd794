//go:build e2e

package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/railyard-io/railyard/internal/benchplan"
	"github.com/railyard-io/railyard/test/e2e/framework"
)

// TestBenchRunMPIJobWithoutOperator runs `railyard bench run` (the real
// binary) with bench plan's nccl-tests MPIJob on the real cluster, which
// has no MPI Operator: first without the MPIJob CRD (the run fails naming
// the operator, nothing is created), then with the CRD written for
// TestBenchPlanMPIJobPassesServerDryRun but no operator controller (the
// MPIJob is created, nothing turns it into pods, the run times out saying
// it has no status, and the MPIJob is deleted). No MPIJob runs here.
func TestBenchRunMPIJobWithoutOperator(t *testing.T) {
	c := suite.Cluster(t)
	ctx := framework.Context(t, 3*time.Minute)
	bin, err := c.ProjectBin("railyard")
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(c.RESTConfig)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	objs, err := benchplan.Objects(benchplan.Options{Image: framework.BusyboxImage, Nodes: []string{c.NodeName, c.NodeName},
		Tests: []benchplan.Test{benchplan.NCCLTests}, Variants: []benchplan.Variant{benchplan.TCPPodNetwork}})
	if err != nil {
		t.Fatal(err)
	}
	y, err := benchplan.YAML(objs)
	if err != nil {
		t.Fatal(err)
	}
	plan := filepath.Join(dir, "nccl.yaml")
	if err := os.WriteFile(plan, y, 0o644); err != nil {
		t.Fatal(err)
	}
	const job = "railyard-bench-nccl-tcp-podnet"
	mpijobs := dyn.Resource(schema.GroupVersionResource{Group: "kubeflow.org", Version: "v2beta1", Resource: "mpijobs"}).Namespace("default")
	crds := dyn.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"})

	t.Run("no CRD", func(t *testing.T) {
		waitCRDGone(ctx, t, crds) // another test's CRD may still be going
		stdout, stderr, err := railyard(ctx, bin, "bench", "run", "-f", plan, "--kubeconfig", c.Kubeconfig, "--timeout", "1m",
			"--out", filepath.Join(dir, "report-nocrd"))
		t.Logf("%s\n%s", stdout, stderr)
		if exitCode(err) != 1 {
			t.Errorf("exit %d (%v), want 1", exitCode(err), err)
		}
		if !strings.Contains(stdout, job+"  tcp-podnet  failed  MPIJob default/"+job+
			": the cluster does not serve MPIJobs (kubeflow.org/v2beta1): install the MPI Operator") ||
			!strings.Contains(stdout, "deleted the 0 objects the run created") {
			t.Errorf("runs table:\n%s", stdout)
		}
	})

	t.Run("CRD without operator", func(t *testing.T) {
		crd, err := framework.DecodeObjects([]byte(mpiJobCRD))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := crds.Create(ctx, crd[0], metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating the MPIJob CRD: %v", err)
		}
		t.Cleanup(func() { _ = crds.Delete(context.Background(), "mpijobs.kubeflow.org", metav1.DeleteOptions{}) })
		waitEstablished(ctx, t, crds)
		waitServed(ctx, t, c)
		start := time.Now()
		stdout, stderr, err := railyard(ctx, bin, "bench", "run", "-f", plan, "--kubeconfig", c.Kubeconfig, "--timeout", "5s",
			"--out", filepath.Join(dir, "report-crd"))
		t.Logf("bench run took %v\n%s\n%s", time.Since(start).Round(time.Millisecond), stdout, stderr)
		if exitCode(err) != 1 {
			t.Errorf("exit %d (%v), want 1", exitCode(err), err)
		}
		want := job + "  tcp-podnet  timed-out  timed out after 5s while waiting for MPIJob " + job +
			" (no status yet: is the MPI Operator's controller running?); no launcher pod; 0 of 2 worker pods"
		if !strings.Contains(stdout, want) || !strings.Contains(stdout, "deleted the 1 objects the run created") {
			t.Errorf("runs table lacks %q:\n%s", want, stdout)
		}
		if _, err := mpijobs.Get(ctx, job, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("the MPIJob is still there: %v", err)
		}
	})
}

// waitServed waits until the apiserver's discovery lists mpijobs.
func waitServed(ctx context.Context, t *testing.T, c *framework.Cluster) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		list, err := c.Client.Discovery().ServerResourcesForGroupVersion("kubeflow.org/v2beta1")
		if err == nil {
			for _, r := range list.APIResources {
				if r.Name == "mpijobs" {
					return
				}
			}
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			t.Fatalf("mpijobs not in discovery within 30s (last error %v)", err)
		}
	}
}

// waitCRDGone waits until no MPIJob CRD is there.
func waitCRDGone(ctx context.Context, t *testing.T, crds dynamic.NamespaceableResourceInterface) {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		_, err := crds.Get(ctx, "mpijobs.kubeflow.org", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			t.Fatalf("the MPIJob CRD is still there after 60s (%v)", err)
		}
	}
}
