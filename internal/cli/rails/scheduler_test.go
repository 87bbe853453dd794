package rails

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	schedv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"sigs.k8s.io/yaml"

	"github.com/railyard-io/railyard/internal/cli/clitest"
	"github.com/railyard-io/railyard/internal/cli/iostreams"
)

var update = flag.Bool("update", false, "rewrite testdata/scheduler/*.yaml from the commands' output")

const nodesFile = "testdata/scheduler/nodes.json"

// TestSchedulerObjectsMatchGoldenFiles: each scheduler's objects from the
// fixture's nodes (two units; su1 with a leaf set of 3 nodes and a
// miswired node alone in its leaf set, su2 with one of 2; a GPU node
// without fabric labels; a CPU node; two nodes labelled by Topograph).
// `go test ./internal/cli/rails -update` rewrites the files.
func TestSchedulerObjectsMatchGoldenFiles(t *testing.T) {
	t.Parallel()
	gpu := []string{"--from", nodesFile, "-l", "nvidia.com/gpu.present=true"}
	for _, tc := range []struct {
		golden string
		args   []string
		stderr []string // lines stderr must hold
	}{
		{"kueue.yaml", append([]string{"kueue"}, gpu...), []string{
			"7 nodes: 3 leaf sets (railyard.io/leaf-set, the largest 3 nodes), 2 units (railyard.io/fabric-unit, the largest 4 nodes)",
			"warning: 1 nodes without railyard.io/leaf-set (gpu-7)",
			"kueue.x-k8s.io/podset-required-topology: railyard.io/leaf-set"}},
		{"kueue-topograph.yaml", []string{"kueue", "--labels", "topograph", "--from", nodesFile, "-l", "fabric.topograph.run/tier-0", "--node-label", "fabric.topograph.run/tier-0=Leaf_07", "--name", "tg", "--flavor", "tg-gpu"},
			[]string{"2 nodes: 1 leaf sets (fabric.topograph.run/tier-0, the largest 2 nodes), 1 units (fabric.topograph.run/tier-1, the largest 2 nodes)"}},
		{"kai.yaml", append([]string{"kai"}, gpu...), []string{"kai.scheduler/topology-required-placement: railyard.io/fabric-unit"}},
		{"volcano.yaml", append([]string{"volcano"}, gpu...), nil},
		{"volcano-hypernodes.yaml", append([]string{"volcano", "--hypernodes"}, gpu...), []string{"5 HyperNodes"}},
		{"volcano-hypernodes-topograph.yaml", []string{"volcano", "--hypernodes", "--labels", "topograph", "--from", nodesFile, "-l", "fabric.topograph.run/tier-0"}, []string{"2 HyperNodes"}},
		{"podgroup.yaml", []string{"podgroup", "job-a", "--pods", "3", "-n", "training", "--from", nodesFile}, []string{"3 pods under one value of railyard.io/leaf-set"}},
		{"podgroup-unit.yaml", []string{"podgroup", "job-b", "--pods", "4", "--from", nodesFile}, []string{"4 pods under one value of railyard.io/fabric-unit"}},
		{"workload.yaml", []string{"podgroup", "job-c", "--pods", "2", "--workload", "--template", "trainers", "--from", nodesFile}, nil},
	} {
		t.Run(tc.golden, func(t *testing.T) {
			t.Parallel()
			out, errOut, err := clitest.Run(t, NewCommand, "", append([]string{"scheduler"}, tc.args...)...)
			if err != nil {
				t.Fatalf("%v\nstderr: %s", err, errOut)
			}
			for _, line := range tc.stderr {
				if !strings.Contains(errOut, line) {
					t.Errorf("stderr lacks %q:\n%s", line, errOut)
				}
			}
			path := filepath.Join("testdata", "scheduler", tc.golden)
			if *update {
				if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (go test -update writes it)", err)
			}
			if diff := cmp.Diff(string(want), out); diff != "" {
				t.Errorf("%s (-want +got):\n%s", path, diff)
			}
		})
	}
}

// The PodGroup and the Workload are k8s.io/api's scheduling/v1beta1
// types: the output decodes strictly into them, with the gang and the
// topology key; the Volcano ConfigMap's configuration holds the label
// source with the three tiers.
func TestSchedulerObjectsDecode(t *testing.T) {
	t.Parallel()
	out, _, err := clitest.Run(t, NewCommand, "", "scheduler", "podgroup", "job-a", "--pods", "3", "--from", nodesFile)
	if err != nil {
		t.Fatal(err)
	}
	var pg schedv1beta1.PodGroup
	if err := yaml.UnmarshalStrict([]byte(out), &pg); err != nil {
		t.Fatalf("no PodGroup: %v\n%s", err, out)
	}
	want := schedv1beta1.PodGroupSpec{
		SchedulingPolicy:      schedv1beta1.PodGroupSchedulingPolicy{Gang: &schedv1beta1.GangSchedulingPolicy{MinCount: 3}},
		SchedulingConstraints: &schedv1beta1.PodGroupSchedulingConstraints{Topology: []schedv1beta1.TopologyConstraint{{Key: "railyard.io/leaf-set"}}},
	}
	if diff := cmp.Diff(want, pg.Spec); diff != "" || pg.APIVersion != "scheduling.k8s.io/v1beta1" || pg.Kind != "PodGroup" {
		t.Errorf("PodGroup %s/%s (-want +got):\n%s", pg.APIVersion, pg.Kind, diff)
	}

	out, _, err = clitest.Run(t, NewCommand, "", "scheduler", "volcano", "--from", nodesFile)
	if err != nil {
		t.Fatal(err)
	}
	var cm corev1.ConfigMap
	if err := yaml.UnmarshalStrict([]byte(out), &cm); err != nil {
		t.Fatal(err)
	}
	var conf struct {
		NetworkTopologyDiscovery []struct {
			Source  string `json:"source"`
			Enabled bool   `json:"enabled"`
			Config  struct {
				NetworkTopologyTypes map[string][]struct {
					NodeLabel string `json:"nodeLabel"`
				} `json:"networkTopologyTypes"`
			} `json:"config"`
		} `json:"networkTopologyDiscovery"`
	}
	if err := yaml.UnmarshalStrict([]byte(cm.Data["volcano-controller.conf"]), &conf); err != nil {
		t.Fatalf("volcano-controller.conf: %v\n%s", err, cm.Data["volcano-controller.conf"])
	}
	d := conf.NetworkTopologyDiscovery
	if len(d) != 1 || d[0].Source != "label" || !d[0].Enabled || cm.Name != "volcano-controller-configmap" || cm.Namespace != "volcano-system" {
		t.Fatalf("discovery %+v in %s/%s", d, cm.Namespace, cm.Name)
	}
	var tiers []string
	for _, l := range d[0].Config.NetworkTopologyTypes["railyard-rail-fabric"] {
		tiers = append(tiers, l.NodeLabel)
	}
	if diff := cmp.Diff([]string{"railyard.io/fabric-unit", "railyard.io/leaf-set", "kubernetes.io/hostname"}, tiers); diff != "" {
		t.Errorf("tiers (-want +got):\n%s", diff)
	}
}

// The nodes come from the cluster (client-go's fake clientset here), the
// selector sent to the API server.
func TestSchedulerReadsTheClusterNodes(t *testing.T) {
	t.Parallel()
	node := func(name string, labels map[string]string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	}
	cs := fake.NewClientset(
		node("a", map[string]string{"gpu": "yes", "railyard.io/leaf-set": "ls-1", "railyard.io/fabric-unit": "u1"}),
		node("b", map[string]string{"gpu": "yes", "railyard.io/leaf-set": "ls-1", "railyard.io/fabric-unit": "u1"}),
		node("c", map[string]string{"railyard.io/leaf-set": "ls-2", "railyard.io/fabric-unit": "u1"}),
	)
	connect := func(string, time.Duration) (kubernetes.Interface, error) { return cs, nil }
	newCmd := func(s iostreams.Streams) *cobra.Command { return newSchedulerCommand(s, connect) }
	out, errOut, err := clitest.Run(t, newCmd, "", "volcano", "--hypernodes", "-l", "gpu=yes")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(errOut, "2 nodes: 1 leaf sets") || strings.Count(out, "kind: HyperNode") != 2 || strings.Contains(out, "ls-2") {
		t.Errorf("stderr %q\nstdout:\n%s", errOut, out)
	}
}

func TestSchedulerRefusesBadInput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	conflict := filepath.Join(dir, "conflict.json")
	if err := os.WriteFile(conflict, []byte(`{"items": [
		{"kind": "Node", "metadata": {"name": "a", "labels": {"railyard.io/leaf-set": "ls-1", "railyard.io/fabric-unit": "u1"}}},
		{"kind": "Node", "metadata": {"name": "b", "labels": {"railyard.io/leaf-set": "ls-1", "railyard.io/fabric-unit": "u2"}}}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"kueue", "--from", nodesFile, "--labels", "slurm"}, "--labels"},
		{[]string{"kueue", "--from", nodesFile, "--unit-label", "kubernetes.io/unit"}, "reserves"},
		{[]string{"kueue", "--from", nodesFile, "--name", "Rail_Fabric"}, "--name"},
		{[]string{"kueue", "--from", nodesFile, "--node-label", "gpu"}, "KEY=VALUE"},
		{[]string{"kueue", "--from", nodesFile, "-l", "a in ("}, "--selector"},
		{[]string{"volcano", "--from", nodesFile, "-n", "Volcano"}, "--namespace"},
		{[]string{"volcano", "--hypernodes", "--from", conflict}, "has nodes in units"},
		{[]string{"podgroup", "job", "--from", nodesFile}, "--pods"},
		{[]string{"podgroup", "job", "--pods", "9", "--from", nodesFile}, "holds 9 nodes"},
		{[]string{"podgroup", "job", "--pods", "2", "--level", "rack", "--from", nodesFile}, "--level"},
		{[]string{"kai", "--from", "/nonexistent/nodes.json"}, "nodes.json"},
	} {
		_, _, err := clitest.Run(t, NewCommand, "", append([]string{"scheduler"}, tc.args...)...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want one saying %q", tc.args, err, tc.want)
		}
	}
}
