package fabric

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sfake "k8s.io/client-go/kubernetes/fake"

	"github.com/railyard-io/railyard/internal/cli/clitest"
	"github.com/railyard-io/railyard/internal/cli/iostreams"
	"github.com/railyard-io/railyard/internal/fabric"
	"github.com/railyard-io/railyard/internal/inputfile"
)

func node(name string, leaves ...string) fabric.Node {
	n := fabric.Node{Name: name}
	for i, l := range leaves {
		n.Ports = append(n.Ports, fabric.Port{Rail: i, NIC: fmt.Sprintf("mlx5_%d", i), Switch: l, RateGbps: 400, MTU: 9000})
	}
	return n
}

func writeNodes(t *testing.T, nodes ...fabric.Node) string {
	t.Helper()
	b, err := json.Marshal(nodes)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "nodes.json")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestFabricFromFile(t *testing.T) {
	t.Parallel()
	clean := writeNodes(t, node("gpu-1", "leaf-0", "leaf-1"), node("gpu-2", "leaf-0", "leaf-1"), node("gpu-3", "leaf-0", "leaf-1"))
	out, _, err := clitest.Run(t, NewCommand, "", "--from", clean)
	if err != nil {
		t.Fatalf("clean fabric: %v\n%s", err, out)
	}
	for _, want := range []string{"RAIL 0", "RAIL 1", "gpu-3", "leaf-1", "Rails are isolated", "ncclCrossNIC: 0", "No findings."} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}

	swapped := writeNodes(t, node("gpu-1", "leaf-0", "leaf-1"), node("gpu-2", "leaf-1", "leaf-0"), node("gpu-3", "leaf-0", "leaf-1"))
	out, _, err = clitest.Run(t, NewCommand, "", "--from", swapped)
	var exit *iostreams.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 2 {
		t.Fatalf("swapped cable: err = %v, want exit 2\n%s", err, out)
	}
	for _, want := range []string{"leaf-1 !", "FAIL  gpu-2: rail 0 NIC mlx5_0 reaches leaf-1", "swapped cable"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}

	out, _, err = clitest.Run(t, NewCommand, "", "--from", swapped, "--json")
	if !errors.As(err, &exit) {
		t.Fatalf("--json: err = %v", err)
	}
	var rep fabric.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("--json output: %v\n%s", err, out)
	}
	if len(rep.Findings) != 2 || rep.Rails[0].Leaf != "leaf-0" {
		t.Errorf("--json: findings %+v, rails %+v", rep.Findings, rep.Rails)
	}
}

func TestFabricRefusesBadFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	garbage := filepath.Join(dir, "garbage.json")
	if err := os.WriteFile(garbage, []byte(`{"name": "not a list"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	empty := writeNodes(t)
	for _, tc := range []struct {
		path, want string
		is         error
	}{
		{path: fifo, is: inputfile.ErrNotRegular},
		{path: garbage, want: "want a JSON list of nodes"},
		{path: empty, want: "no node publishes its fabric ports"},
		{path: filepath.Join(dir, "missing"), is: os.ErrNotExist},
	} {
		_, _, err := clitest.Run(t, NewCommand, "", "--from", tc.path)
		if err == nil || (tc.is != nil && !errors.Is(err, tc.is)) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("--from %s: err = %v, want %v / %q", tc.path, err, tc.is, tc.want)
		}
	}
}

// TestClusterNodesReadsAnnotations runs against client-go's fake
// clientset (no apiserver): the annotation reading and skipping; the
// multi-node e2e reads a real cluster.
func TestClusterNodesReadsAnnotationsFakeClientset(t *testing.T) {
	t.Parallel()
	annotated := func(n fabric.Node) *corev1.Node {
		v, err := fabric.EncodePorts(n.Ports)
		if err != nil {
			t.Fatal(err)
		}
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.Name, Labels: map[string]string{"gpu": "true"},
			Annotations: map[string]string{fabric.PortsAnnotation: v}}}
	}
	cs := k8sfake.NewClientset(
		annotated(node("gpu-1", "leaf-0")),
		annotated(node("gpu-2", "leaf-0")),
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "control-plane"}},
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "bad", Labels: map[string]string{"gpu": "true"},
			Annotations: map[string]string{fabric.PortsAnnotation: "{"}}},
	)
	// A garbled annotation, one with a field from a newer publisher and
	// one too large are each skipped with the reason; the rest is judged.
	newer := `[{"rail":0,"nic":"mlx5_0","switch":"leaf-0","fromTheFuture":1}]`
	huge := `[{"rail":0,"nic":"` + strings.Repeat("x", fabric.MaxAnnotation) + `"}]`
	for name, v := range map[string]string{"newer": newer, "huge": huge} {
		if _, err := cs.CoreV1().Nodes().Create(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name,
			Labels: map[string]string{"gpu": "true"}, Annotations: map[string]string{fabric.PortsAnnotation: v}}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	nodes, skipped, err := clusterNodes(context.Background(), cs, "")
	if err != nil {
		t.Fatalf("a bad annotation stopped the report: %v", err)
	}
	var got []string
	for _, n := range nodes {
		got = append(got, n.Name)
	}
	var bad []string
	for _, n := range skipped.NotDecoded {
		if n.Error == "" {
			t.Errorf("node %s skipped without a reason", n.Node)
		}
		bad = append(bad, n.Node)
	}
	if diff := cmp.Diff([]string{"gpu-1", "gpu-2"}, got); diff != "" {
		t.Errorf("judged nodes (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"bad", "huge", "newer"}, bad); diff != "" {
		t.Errorf("nodes not decoded (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"control-plane"}, skipped.Unannotated); diff != "" {
		t.Errorf("nodes without the annotation (-want +got):\n%s", diff)
	}
	var out strings.Builder
	if err := writeTable(&out, fabric.Analyze(nodes), skipped); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "Not reporting newer: its "+fabric.PortsAnnotation+" annotation does not decode") {
		t.Errorf("the table does not say why newer is left out:\n%s", out.String())
	}
	nodes, skipped, err = clusterNodes(context.Background(), cs, "gpu=true")
	if err != nil || len(nodes) != 2 || len(skipped.Unannotated) != 0 || len(skipped.NotDecoded) != 3 {
		t.Errorf("with a selector: %v, %+v, %v", nodes, skipped, err)
	}
}
