//go:build e2e

package e2e

import (
	"os/exec"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/railyard-io/railyard/test/e2e/framework"
)

// TestBenchPlanPerftestManifestsPassServerDryRun feeds the perftest
// manifests of `railyard bench plan` (RDMA and TCP variants) to the real
// apiserver with dryRun=All: every object must decode, default, validate and
// pass admission. (The nccl-tests MPIJob needs the MPI Operator's CRD, which
// this cluster does not have, so it is not included.)
func TestBenchPlanPerftestManifestsPassServerDryRun(t *testing.T) {
	c := suite.Cluster(t)
	ctx := framework.Context(t, time.Minute)
	bin, err := c.ProjectBin("railyard")
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.CommandContext(ctx, bin, "bench", "plan",
		"--image", framework.BusyboxImage, "--nodes", c.NodeName+","+c.NodeName,
		"--tests", "perftest", "--variant", "both").Output()
	if err != nil {
		t.Fatalf("railyard bench plan: %v", err)
	}
	objs, err := framework.DecodeObjects(out)
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	for _, o := range objs {
		kinds[o.GetKind()]++
	}
	if kinds["Pod"] != 4 {
		t.Errorf("plan has %d pods (%v), want 4 (server and client, rdma and tcp)", kinds["Pod"], kinds)
	}
	results, err := c.DryRunApply(ctx, objs)
	if err != nil {
		t.Fatalf("server dry run rejected the plan: %v", err)
	}
	for i, r := range results {
		if r.Object.GetUID() == "" {
			t.Errorf("object %d (%s %s): server returned no uid", i, objs[i].GetKind(), objs[i].GetName())
		}
		if objs[i].GetKind() == "Pod" {
			// The server defaulted it, so it really went through the pod
			// registry's strategy.
			sched, _, _ := unstructured.NestedString(r.Object.Object, "spec", "schedulerName")
			if sched != "default-scheduler" {
				t.Errorf("pod %s: schedulerName %q after dry run, want the server default", objs[i].GetName(), sched)
			}
		}
	}
}
