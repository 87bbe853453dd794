//go:build e2e

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"sigs.k8s.io/yaml"

	"github.com/railyard-io/railyard/test/e2e/framework"
)

// RailPool is the resource name of rail r's PF pool in the values up.sh
// writes.
func railPool(r int) string { return fmt.Sprintf("railyard.io/rail%d", r) }

// writeValues writes DIR/railyard-values.yaml: the chart values that serve
// each node's fake machine. The machine is at the same path on every node
// (a bind mount of the node's own), so one DaemonSet serves all; each rail
// is a PF pool (railyard.io/rail<r>) of the NIC cabled to that rail's leaf,
// whatever the model calls it.
func writeValues(dir string, info framework.ClusterInfo, tag string) error {
	var pools []any
	for _, r := range info.Rails {
		var names []string
		for _, n := range info.GPUNodes() {
			if r.Index < len(n.Rails) && !slices.Contains(names, n.Rails[r.Index]) {
				names = append(names, n.Rails[r.Index])
			}
		}
		pools = append(pools, map[string]any{
			"name": railPool(r.Index), "deviceKind": "pf", "policy": "spread",
			"selectors": map[string]any{"pfNames": names},
		})
	}
	image := map[string]any{"pullPolicy": "Never"}
	if tag != "" {
		image["tag"] = tag
	}
	values := map[string]any{
		"image": image,
		"cni":   map[string]any{"binDir": info.CNIBinDir},
		"config": map[string]any{
			"sysfsRoot": filepath.Join(info.MachineDir, "sysfs"),
			"devRoot":   filepath.Join(info.MachineDir, "dev"),
			"pools":     pools,
		},
	}
	data, err := yaml.Marshal(values)
	if err != nil {
		return err
	}
	head := "# hack/cluster/up.sh: Railyard's chart values for this cluster's fake machines.\n# helm install railyard deploy/helm/railyard -n railyard-system --create-namespace -f " + filepath.Join(dir, "railyard-values.yaml") + "\n"
	return os.WriteFile(filepath.Join(dir, "railyard-values.yaml"), append([]byte(head), data...), 0o644)
}
