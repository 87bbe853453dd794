//go:build e2e

package latebinding

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/railyard-io/railyard/internal/helmchart"
	"github.com/railyard-io/railyard/test/e2e/framework"
)

// TestDRAChartObjectsPassServerDryRun: what the chart adds for a pool with
// delivery dra (templates/dra.yaml: the DeviceClass, the ClusterRole and
// its binding, the ValidatingAdmissionPolicy and its binding) passes the
// real kube-apiserver 1.35's validation and admission in a server-side
// dry run, which compiles the DeviceClass's and the policy's CEL. Nothing
// is stored. Not checked here: the policy denying another node's slices
// (the service account token would need the node name, which this
// cluster's static tokens lack).
func TestDRAChartObjectsPassServerDryRun(t *testing.T) {
	c := suite.Cluster(t)
	ctx := framework.Context(t, 2*time.Minute)
	repo, err := framework.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	ch, err := helmchart.Load(filepath.Join(repo, "deploy/helm/railyard"))
	if err != nil {
		t.Fatal(err)
	}
	ms, err := helmchart.Render(ch, helmchart.Options{Release: "railyard", Namespace: "railyard-system", Values: map[string]any{
		"config": map[string]any{"cdiSpecDir": "/var/run/cdi", "pools": []any{
			map[string]any{"name": "railyard.io/rdma_vf", "deviceKind": "vf", "delivery": "dra", "selectors": map[string]any{"vendors": []any{"15b3"}}},
		}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	var stream []byte
	for _, m := range ms {
		if m.Source == "railyard/templates/dra.yaml" {
			stream = append(stream, []byte("---\n"+m.Content+"\n")...)
		}
	}
	objs, err := framework.DecodeObjects(stream)
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]bool{}
	for _, o := range objs {
		kinds[o.GetKind()] = true
	}
	for _, k := range []string{"DeviceClass", "ClusterRole", "ClusterRoleBinding", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"} {
		if !kinds[k] {
			t.Errorf("templates/dra.yaml renders no %s (%v)", k, kinds)
		}
	}
	results, err := c.DryRunApply(ctx, objs)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range results {
		if r.Err != nil {
			t.Errorf("%s %s: %v", objs[i].GetKind(), objs[i].GetName(), r.Err)
		}
	}
}
