//go:build e2e

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/railyard-io/railyard/internal/helmchart"
	"github.com/railyard-io/railyard/test/e2e/framework"
)

// TestValuesServeEveryNodesMachine: one PF pool per rail naming that
// rail's NIC of every model in the cluster, the machine and CNI bin dir at
// their shared paths, the imported tag, never pulled.
func TestValuesServeEveryNodesMachine(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	info := framework.ClusterInfo{
		MachineDir: "/c/machine", CNIBinDir: "/c/cni-bin",
		Rails: []framework.RailInfo{{Index: 0}, {Index: 1}},
		Nodes: []framework.NodeInfo{
			{Name: "control-plane", Role: framework.RoleControlPlane},
			{Name: "gpu-1", Role: framework.RoleGPU, Rails: []string{"ibp24s0", "ibp64s0"}},
			{Name: "gpu-2", Role: framework.RoleGPU, Rails: []string{"ibp12s0"}},
			{Name: "gpu-3", Role: framework.RoleGPU, Rails: []string{"ibp24s0", "ibp75s0"}},
		},
	}
	if err := writeValues(dir, info, "0.1.0"); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, "railyard-values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := yaml.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	pool := func(name string, pfs ...any) any {
		return map[string]any{"name": name, "deviceKind": "pf", "policy": "spread", "selectors": map[string]any{"pfNames": pfs}}
	}
	want := map[string]any{
		"image": map[string]any{"tag": "0.1.0", "pullPolicy": "Never"},
		"cni":   map[string]any{"binDir": "/c/cni-bin"},
		"config": map[string]any{
			"sysfsRoot": "/c/machine/sysfs",
			"devRoot":   "/c/machine/dev",
			"pools": []any{
				pool("railyard.io/rail0", "ibp24s0", "ibp12s0"),
				pool("railyard.io/rail1", "ibp64s0", "ibp75s0"),
			},
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("values (-want +got):\n%s", diff)
	}
	// The chart takes them (its schema included), mounting the machine.
	repo, err := framework.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	ch, err := helmchart.Load(filepath.Join(repo, "deploy/helm/railyard"))
	if err != nil {
		t.Fatal(err)
	}
	ms, err := helmchart.Render(ch, helmchart.Options{Release: "railyard", Namespace: "railyard-system", Values: got})
	if err != nil {
		t.Fatalf("the chart refuses the values: %v", err)
	}
	if stream := helmchart.Stream(ms); !strings.Contains(stream, "path: /c/machine/sysfs") || !strings.Contains(stream, "path: /c/cni-bin") {
		t.Errorf("the DaemonSet does not mount the machine and CNI bin dir:\n%s", stream)
	}
}
