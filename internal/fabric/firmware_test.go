package fabric

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/railyard-io/railyard/internal/discovery"
	"github.com/railyard-io/railyard/internal/fakesysfs"
	"github.com/railyard-io/railyard/internal/topology"
	"github.com/railyard-io/railyard/machines"
)

// fwNode is railNode with ConnectX-7 NICs (15b3:1021) all on one release.
func fwNode(name string, rails int, version string) Node {
	n := railNode(name, rails)
	for i := range n.Ports {
		n.Ports[i].Model, n.Ports[i].Firmware = "15b3:1021", version
	}
	return n
}

func TestAnalyzeFindsFirmwareOffItsModelsRelease(t *testing.T) {
	t.Parallel()
	const cur, other = "28.39.1002", "28.42.1000"
	oneFlashed := fwNode("n2", 4, cur)
	oneFlashed.Ports[2].Firmware = other
	wholeNode := fwNode("n3", 4, other)
	unknown := fwNode("n2", 4, "")
	oldAnnotation := railNode("n4", 4) // no model, no firmware: published before they were
	storage := fwNode("n2", 2, cur)    // a NIC no GPU uses, of the same model
	storage.Ports = append(storage.Ports, Port{Rail: -1, NIC: "mlx5_9", Model: "15b3:1021", Firmware: other})
	otherModel := fwNode("n2", 2, cur) // a BlueField-3 on its own release
	otherModel.Ports[1].Model, otherModel.Ports[1].Firmware = "15b3:a2dc", "32.39.1002"

	for _, tc := range []struct {
		name  string
		nodes []Node
		want  []string
		text  string // the first finding's message, exactly
	}{
		{name: "two nodes, one card flashed differently", nodes: []Node{fwNode("n1", 4, cur), oneFlashed},
			want: []string{"warn n2 rail 2 mlx5_2"},
			text: "NIC mlx5_2 on n2 (model 15b3:1021) runs firmware 28.42.1000; 7 of the model's 8 ports with a known version run 28.39.1002"},
		{name: "three nodes, one node flashed differently", nodes: []Node{fwNode("n1", 4, cur), fwNode("n2", 4, cur), wholeNode},
			want: []string{"warn n3 rail 0 mlx5_0", "warn n3 rail 1 mlx5_1", "warn n3 rail 2 mlx5_2", "warn n3 rail 3 mlx5_3"},
			text: "NIC mlx5_0 on n3 (model 15b3:1021) runs firmware 28.42.1000; 8 of the model's 12 ports with a known version run 28.39.1002"},
		{name: "two nodes on two releases: a tie goes to the smaller version", nodes: []Node{wholeNode, fwNode("n1", 4, cur)},
			want: []string{"warn n3 rail 0 mlx5_0", "warn n3 rail 1 mlx5_1", "warn n3 rail 2 mlx5_2", "warn n3 rail 3 mlx5_3"},
			text: "NIC mlx5_0 on n3 (model 15b3:1021) runs firmware 28.42.1000; 4 of the model's 8 ports with a known version run 28.39.1002"},
		{name: "unknown versions are left out", nodes: []Node{unknown, fwNode("n1", 4, cur), wholeNode},
			want: []string{"warn n3 rail 0 mlx5_0", "warn n3 rail 1 mlx5_1", "warn n3 rail 2 mlx5_2", "warn n3 rail 3 mlx5_3"},
			text: "NIC mlx5_0 on n3 (model 15b3:1021) runs firmware 28.42.1000; 4 of the model's 8 ports with a known version run 28.39.1002"},
		{name: "an annotation without models is not compared", nodes: []Node{fwNode("n1", 4, cur), oldAnnotation}},
		{name: "a port without a rail is compared too", nodes: []Node{fwNode("n1", 2, cur), storage},
			want: []string{"warn n2 rail -1 mlx5_9"},
			text: "NIC mlx5_9 on n2 (model 15b3:1021) runs firmware 28.42.1000; 4 of the model's 5 ports with a known version run 28.39.1002"},
		{name: "models are compared apart", nodes: []Node{fwNode("n1", 2, cur), otherModel}},
		{name: "one release everywhere", nodes: []Node{fwNode("n1", 4, cur), fwNode("n2", 4, cur), fwNode("n3", 4, cur)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep := Analyze(tc.nodes)
			if diff := cmp.Diff(tc.want, findings(rep)); diff != "" {
				t.Fatalf("findings (-want +got):\n%s", diff)
			}
			if len(tc.want) == 0 {
				if rep.Status() != 0 {
					t.Errorf("Status = %d, want 0", rep.Status())
				}
				return
			}
			if rep.Status() != 1 {
				t.Errorf("Status = %d, want 1 (warnings)", rep.Status())
			}
			if got := rep.Findings[0].Message; got != tc.text {
				t.Errorf("message:\n got %s\nwant %s", got, tc.text)
			}
			for _, w := range []string{"mlxfwmanager", "mlxup", "congestion control", "known firmware issues"} {
				if !strings.Contains(rep.Findings[0].Fix, w) {
					t.Errorf("fix does not say %q: %s", w, rep.Findings[0].Fix)
				}
			}
		})
	}
}

// The model and firmware travel in the ports annotation; an annotation
// written before they existed still decodes, and a port without them
// writes neither key.
func TestPortsAnnotationCarriesModelAndFirmware(t *testing.T) {
	t.Parallel()
	ports := fwNode("n1", 2, "28.39.1002").Ports
	s, err := EncodePorts(ports)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(s, `"model":"15b3:1021","firmware":"28.39.1002"`) {
		t.Errorf("annotation lacks the model and firmware: %s", s)
	}
	back, err := DecodePorts(s)
	if err != nil || !cmp.Equal(ports, back) {
		t.Errorf("round trip: %v\n%+v\n%+v", err, ports, back)
	}
	old := `[{"rail":0,"nic":"mlx5_0","netdev":"eth0","switch":"leaf-0","rateGbps":400}]`
	got, err := DecodePorts(old)
	if err != nil || len(got) != 1 || got[0].Model != "" || got[0].Firmware != "" {
		t.Errorf("an older annotation: %+v, %v", got, err)
	}
	s, _ = EncodePorts(railNode("n1", 1).Ports)
	if strings.Contains(s, "model") || strings.Contains(s, "firmware") {
		t.Errorf("a port without model and firmware writes them: %s", s)
	}
}

// Two dgx-h100 nodes from generated sysfs trees, one ConnectX-7 of the
// second flashed with another release: PortsOf carries each NIC's model
// and fw_ver, and Analyze names that one port.
func TestPortsOfCarryFirmwareToAnalyze(t *testing.T) {
	t.Parallel()
	var nodes []Node
	for _, name := range []string{"gpu-1", "gpu-2"} {
		root := t.TempDir()
		if err := machines.WriteSysfs("dgx-h100", root, 0); err != nil {
			t.Fatal(err)
		}
		if name == "gpu-2" {
			if err := fakesysfs.SetFirmware(root, "mlx5_4", "28.42.1000"); err != nil {
				t.Fatal(err)
			}
		}
		topo, err := discovery.Discover(context.Background(), root)
		if err != nil {
			t.Fatal(err)
		}
		ports := PortsOf(topo)
		for _, p := range ports {
			nic, ok := topology.NIC{}, false
			for _, n := range topo.NICs {
				if n.Name() == p.NIC {
					nic, ok = n, true
				}
			}
			if !ok || p.Model != fmt.Sprintf("%04x:%04x", nic.Vendor, nic.Device) || p.Firmware != nic.Firmware || p.Firmware == "" {
				t.Errorf("%s port %s: model %q, firmware %q; NIC %04x:%04x %q", name, p.NIC, p.Model, p.Firmware, nic.Vendor, nic.Device, nic.Firmware)
			}
		}
		nodes = append(nodes, Node{Name: name, Ports: ports})
	}
	rep := Analyze(nodes)
	var rail int
	for _, p := range nodes[1].Ports {
		if p.NIC == "mlx5_4" {
			rail = p.Rail
		}
	}
	// The generated trees' ports heard no neighbor: one warning says so,
	// and the firmware is compared all the same.
	want := []string{"warn  rail -1 ", fmt.Sprintf("warn gpu-2 rail %d mlx5_4", rail)}
	if diff := cmp.Diff(want, findings(rep)); diff != "" {
		t.Fatalf("findings (-want +got):\n%s", diff)
	}
	if rep.Findings[0].Kind != KindNoNeighbors || rep.Design != Unknown {
		t.Errorf("first finding %+v, design %s; want %s, %s", rep.Findings[0], rep.Design, KindNoNeighbors, Unknown)
	}
	msg := "NIC mlx5_4 on gpu-2 (model 15b3:1021) runs firmware 28.42.1000; 15 of the model's 16 ports with a known version run 28.39.1002"
	if rep.Findings[1].Message != msg {
		t.Errorf("message:\n got %s\nwant %s", rep.Findings[1].Message, msg)
	}
}
