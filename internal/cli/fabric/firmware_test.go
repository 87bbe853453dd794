package fabric

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sfake "k8s.io/client-go/kubernetes/fake"

	"github.com/railyard-io/railyard/internal/cli/clitest"
	"github.com/railyard-io/railyard/internal/cli/iostreams"
	"github.com/railyard-io/railyard/internal/fabric"
)

// flashed is node with ConnectX-7 NICs on 28.39.1002, but for the rails
// in other, on 28.42.1000.
func flashed(name string, other map[int]bool, leaves ...string) fabric.Node {
	n := node(name, leaves...)
	for i := range n.Ports {
		n.Ports[i].Model, n.Ports[i].Firmware = "15b3:1021", "28.39.1002"
		if other[i] {
			n.Ports[i].Firmware = "28.42.1000"
		}
	}
	return n
}

func TestFabricReportsFirmwareAcrossNodes(t *testing.T) {
	t.Parallel()
	path := writeNodes(t, flashed("gpu-1", nil, "leaf-0", "leaf-1"), flashed("gpu-2", map[int]bool{1: true}, "leaf-0", "leaf-1"),
		flashed("gpu-3", nil, "leaf-0", "leaf-1"))
	out, _, err := clitest.Run(t, NewCommand, "", "--from", path)
	var exit *iostreams.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("one card on another release: err = %v, want exit 1\n%s", err, out)
	}
	for _, want := range []string{
		"WARN  gpu-2: NIC mlx5_1 on gpu-2 (model 15b3:1021) runs firmware 28.42.1000; 5 of the model's 6 ports with a known version run 28.39.1002",
		"fix: flash one release on every card of the model across the cluster (mlxfwmanager -u, or mlxup",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// The annotations each publisher writes, read back through client-go's
// fake clientset: the model and firmware survive the strict decoding, and
// a node still publishing the older annotation (no model) is compared on
// its rails only.
func TestClusterNodesReadFirmwareFakeClientset(t *testing.T) {
	t.Parallel()
	annotated := func(n fabric.Node) *corev1.Node {
		v, err := fabric.EncodePorts(n.Ports)
		if err != nil {
			t.Fatal(err)
		}
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.Name, Annotations: map[string]string{fabric.PortsAnnotation: v}}}
	}
	cs := k8sfake.NewClientset(
		annotated(flashed("gpu-1", nil, "leaf-0", "leaf-1")),
		annotated(flashed("gpu-2", map[int]bool{0: true, 1: true}, "leaf-0", "leaf-1")),
		annotated(flashed("gpu-3", nil, "leaf-0", "leaf-1")),
		annotated(node("gpu-4", "leaf-0", "leaf-1")), // an older publisher
	)
	nodes, _, err := clusterNodes(context.Background(), cs, "")
	if err != nil {
		t.Fatal(err)
	}
	rep := fabric.Analyze(nodes)
	var got []string
	for _, f := range rep.Findings {
		got = append(got, f.Node+" "+f.NIC)
	}
	if strings.Join(got, ", ") != "gpu-2 mlx5_0, gpu-2 mlx5_1" {
		t.Errorf("findings %v, want gpu-2's two NICs", got)
	}
	b, _ := json.Marshal(rep.Findings)
	if !strings.Contains(string(b), `runs firmware 28.42.1000; 4 of the model's 6 ports with a known version run 28.39.1002`) {
		t.Errorf("findings: %s", b)
	}
}

// The dry run of a generated node prints each port's model and firmware:
// what publish writes into the annotation.
func TestPublishDryRunCarriesModelAndFirmware(t *testing.T) {
	t.Parallel()
	got := publishDryRun(t, "roce-8gpu-4nic")
	if len(got.Ports) == 0 {
		t.Fatal("no ports")
	}
	for _, p := range got.Ports {
		if !strings.HasPrefix(p.Model, "15b3:") || !strings.Contains(p.Firmware, ".39.1002") {
			t.Errorf("port %s: model %q, firmware %q; want a generated ConnectX's", p.NIC, p.Model, p.Firmware)
		}
	}
}
