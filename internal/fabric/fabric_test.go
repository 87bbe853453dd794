package fabric

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/validation"
)

// railNode is a node of a rail-optimized cluster: NIC i on leaf-i, 400
// Gb/s, MTU 9000.
func railNode(name string, rails int) Node {
	n := Node{Name: name}
	for i := 0; i < rails; i++ {
		n.Ports = append(n.Ports, Port{Rail: i, NIC: fmt.Sprintf("mlx5_%d", i), Switch: fmt.Sprintf("leaf-%d", i),
			SwitchPort: "swp" + name, RateGbps: 400, MTU: 9000})
	}
	return n
}

func findings(r Report) []string {
	var out []string
	for _, f := range r.Findings {
		out = append(out, fmt.Sprintf("%s %s rail %d %s", f.Severity, f.Node, f.Rail, f.NIC))
	}
	return out
}

func TestAnalyzeCleanRailFabric(t *testing.T) {
	t.Parallel()
	rep := Analyze([]Node{railNode("n2", 4), railNode("n1", 4), railNode("n3", 4)})
	if len(rep.Findings) != 0 {
		t.Fatalf("findings on a clean fabric: %v", findings(rep))
	}
	if !rep.Isolated || rep.Status() != 0 {
		t.Errorf("Isolated = %v, Status = %d; want true, 0", rep.Isolated, rep.Status())
	}
	if diff := cmp.Diff([]string{"n1", "n2", "n3"}, rep.Nodes); diff != "" {
		t.Errorf("nodes (-want +got):\n%s", diff)
	}
	want := Rail{Index: 2, Leaf: "leaf-2", Switches: []string{"leaf-2", "leaf-2", "leaf-2"}}
	if diff := cmp.Diff(want, rep.Rails[2]); diff != "" {
		t.Errorf("rail 2 (-want +got):\n%s", diff)
	}
}

func TestAnalyzeFindsMiswiring(t *testing.T) {
	t.Parallel()
	swapped := railNode("n2", 4)
	swapped.Ports[1].Switch, swapped.Ports[2].Switch = "leaf-2", "leaf-1"
	noNeighbor := railNode("n3", 4)
	noNeighbor.Ports[0].Switch, noNeighbor.Ports[0].NoNeighbor = "", "no LLDP frame within 30s"
	stray := railNode("n4", 4)
	stray.Ports[3].Switch = "leaf-9"
	slow := railNode("n5", 4)
	slow.Ports[0].RateGbps, slow.Ports[1].MTU = 200, 1500

	for _, tc := range []struct {
		name   string
		nodes  []Node
		want   []string
		status int
		text   string
	}{
		{name: "swapped cable", nodes: []Node{railNode("n1", 4), swapped, railNode("n3", 4)},
			want: []string{"fail n2 rail 1 mlx5_1", "fail n2 rail 2 mlx5_2"}, status: 2, text: "the leaf of rail 2"},
		{name: "swapped cable between two nodes is reported on one", nodes: []Node{railNode("n1", 4), swapped},
			want: []string{"fail n2 rail 1 mlx5_1", "fail n2 rail 2 mlx5_2"}, status: 2, text: "swapped cable"},
		{name: "NIC with no neighbor", nodes: []Node{railNode("n1", 4), noNeighbor},
			want: []string{"fail n3 rail 0 mlx5_0"}, status: 2, text: "no LLDP frame within 30s"},
		{name: "node missing from its peers' leaf", nodes: []Node{railNode("n1", 4), railNode("n2", 4), stray},
			want: []string{"warn n4 rail 3 mlx5_3"}, status: 1, text: "no peer on rail 3 uses"},
		{name: "mixed rate and MTU on a rail", nodes: []Node{railNode("n1", 4), railNode("n2", 4), slow},
			want: []string{"warn n5 rail 0 mlx5_0", "warn n5 rail 1 mlx5_1"}, status: 1, text: "link rate 200 Gb/s; its peers have 400 Gb/s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep := Analyze(tc.nodes)
			if diff := cmp.Diff(tc.want, findings(rep)); diff != "" {
				t.Errorf("findings (-want +got):\n%s", diff)
			}
			if rep.Status() != tc.status {
				t.Errorf("Status = %d, want %d", rep.Status(), tc.status)
			}
			var all strings.Builder
			for _, f := range rep.Findings {
				all.WriteString(f.Message + " | " + f.Fix + "\n")
			}
			if !strings.Contains(all.String(), tc.text) {
				t.Errorf("findings do not say %q:\n%s", tc.text, all.String())
			}
		})
	}
}

func TestAnalyzeOneSwitchForAllRailsIsNotIsolatedAndNotMiswired(t *testing.T) {
	t.Parallel()
	var nodes []Node
	for _, name := range []string{"n1", "n2"} {
		n := railNode(name, 4)
		for i := range n.Ports {
			n.Ports[i].Switch = "tor-1"
		}
		nodes = append(nodes, n)
	}
	rep := Analyze(nodes)
	if rep.Isolated {
		t.Error("Isolated = true with one switch for every rail")
	}
	if len(rep.Findings) != 0 {
		t.Errorf("findings: %v", findings(rep))
	}
}

func TestAnalyzeLeavesOutPortsWithoutARail(t *testing.T) {
	t.Parallel()
	n := railNode("n1", 2)
	n.Ports = append(n.Ports, Port{Rail: -1, NIC: "mlx5_9", Switch: "mgmt-sw"})
	rep := Analyze([]Node{n, railNode("n2", 2)})
	if len(rep.Rails) != 2 || len(rep.Findings) != 0 {
		t.Errorf("rails %d, findings %v; want 2 rails, none", len(rep.Rails), findings(rep))
	}
}

func TestLabels(t *testing.T) {
	t.Parallel()
	a, b := railNode("n1", 2), railNode("n2", 2)
	la, lb := Labels(a.Ports), Labels(b.Ports)
	if la["rail.railyard.io/0"] != "leaf-0" || la["rail.railyard.io/1"] != "leaf-1" {
		t.Errorf("rail labels: %v", la)
	}
	if la[LeafSetLabel] == "" || la[LeafSetLabel] != lb[LeafSetLabel] {
		t.Errorf("nodes on the same leaves: leaf sets %q and %q, want equal", la[LeafSetLabel], lb[LeafSetLabel])
	}
	b.Ports[0].Switch, b.Ports[1].Switch = "leaf-1", "leaf-0"
	if Labels(b.Ports)[LeafSetLabel] == la[LeafSetLabel] {
		t.Error("a node with swapped cables shares the leaf set of a well-cabled one")
	}
	for k, v := range la {
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			t.Errorf("label key %q: %v", k, errs)
		}
		if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
			t.Errorf("label value %q: %v", v, errs)
		}
	}
	if got := Labels([]Port{{Rail: 0, NIC: "mlx5_0", NoNeighbor: "down"}}); len(got) != 0 {
		t.Errorf("labels without a neighbor: %v", got)
	}
}

// Leaves names each NIC's leaf as the node's rail label spells it, so a
// claim selecting railyard.io/leaf and a scheduler reading
// rail.railyard.io/<rail> see the same value; a NIC without a neighbor has
// no leaf.
func TestLeavesMatchTheRailLabels(t *testing.T) {
	t.Parallel()
	ports := []Port{
		{Rail: 0, NIC: "mlx5_0", Switch: "leaf-r0-su1"},
		{Rail: 1, NIC: "mlx5_1", Switch: "Ethernet Switch/7"},
		{Rail: 2, NIC: "mlx5_2", NoNeighbor: "not listened on"},
		{Rail: 3, NIC: "mlx5_1", Switch: "another port of mlx5_1"},
	}
	got, labels := Leaves(ports), Labels(ports)
	want := map[string]string{"mlx5_0": labels["rail.railyard.io/0"], "mlx5_1": labels["rail.railyard.io/1"]}
	if diff := cmp.Diff(want, got); diff != "" || got["mlx5_1"] == "Ethernet Switch/7" {
		t.Errorf("Leaves (-want +got):\n%s", diff)
	}
}

func TestLabelValue(t *testing.T) {
	t.Parallel()
	for _, in := range []string{"leaf-r3-su1", "Ethernet Switch/7", strings.Repeat("x", 100), "0c:42:a1:00:00:01", "...", "spine 1", "spine-1"} {
		v := LabelValue(in)
		if errs := validation.IsValidLabelValue(v); len(errs) > 0 || v == "" {
			t.Errorf("LabelValue(%q) = %q: %v", in, v, errs)
		}
	}
	if LabelValue("spine 1") == LabelValue("spine-1") || LabelValue("a:b") == LabelValue("a/b") {
		t.Error("two switch names share a label value")
	}
	if LabelValue("leaf-r3-su1") != "leaf-r3-su1" {
		t.Error("a valid name was changed")
	}
}

func FuzzDecodePorts(f *testing.F) {
	s, _ := EncodePorts(railNode("n1", 2).Ports)
	f.Add(s)
	f.Add(`[{"rail":0,"nic":"x","bogus":1}]`)
	f.Add(`[] []`)
	f.Add(`[{"rail":0,"nic":"x","switches":[]},{"rail":1,"nic":"y","switch":"a","switches":["a","b"]}]`)
	f.Add(`[{"rail":1,"nic":"y","switch":"a","switches":["a","a"],"switchPorts":["p1"]},{"rail":2,"nic":"z","switchPorts":[]}]`)
	f.Fuzz(func(t *testing.T, s string) {
		ports, err := DecodePorts(s)
		if err != nil {
			return
		}
		again, err := EncodePorts(ports)
		if err != nil {
			t.Fatalf("re-encoding %+v: %v", ports, err)
		}
		back, err := DecodePorts(again)
		if err != nil || !cmp.Equal(ports, back) {
			t.Fatalf("round trip: %v\n%+v\n%+v", err, ports, back)
		}
		_ = Labels(ports)
		_ = UnitLabels([]Node{{Name: "a", Ports: ports}, {Name: "b", Ports: ports}})
		_ = Analyze([]Node{{Name: "a", Ports: ports}, {Name: "b", Ports: ports}})
	})
}

// TestDecodePortsRefusesWhatIsNotOneKnownList: the annotation is one port
// list and nothing after it (a "]" after the list used to pass), each key
// known, spelled in its case and given once (the last of two used to win).
func TestDecodePortsRefusesWhatIsNotOneKnownList(t *testing.T) {
	t.Parallel()
	for name, s := range map[string]string{
		"closing bracket after the list":   `[{"rail":0,"nic":"mlx5_0"}]]`,
		"closing brace after the list":     `[{"rail":0,"nic":"mlx5_0"}]}`,
		"a second list":                    `[] []`,
		"duplicate key":                    `[{"rail":0,"nic":"mlx5_0","switch":"leaf-a","switch":"leaf-b"}]`,
		"key in another case":              `[{"rail":0,"NIC":"mlx5_0"}]`,
		"unknown key of a newer publisher": `[{"rail":0,"nic":"mlx5_0","plane":2}]`,
		"over the size bound":              `[{"rail":0,"nic":"` + strings.Repeat("x", MaxAnnotation) + `"}]`,
	} {
		if ports, err := DecodePorts(s); err == nil {
			t.Errorf("%s: DecodePorts accepted it: %+v", name, ports)
		}
	}
}
