package fabric

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/railyard-io/railyard/internal/lldp"
)

// A port whose round heard several neighbors lists them all, sorted
// whatever order they spoke in (so the switch it names does not follow
// which spoke first), each as switch and port: two switches, two ports of
// one switch, two chassis under one system name (named by chassis ID).
// A neighbor heard twice is one.
func TestWithNeighborsListsEveryNeighborHeard(t *testing.T) {
	t.Parallel()
	a := lldp.Neighbor{SystemName: "leaf-1", ChassisID: "0c:42:a1:00:00:01", PortID: "swp3"}
	b := lldp.Neighbor{SystemName: "leaf-0", ChassisID: "0c:42:a1:00:00:02", PortID: "swp3"}
	a2 := lldp.Neighbor{SystemName: "leaf-1", ChassisID: "0c:42:a1:00:00:01", PortID: "swp4"}
	twin := lldp.Neighbor{SystemName: "leaf-1", ChassisID: "0c:42:a1:00:00:09", PortID: "swp3"}
	port := []Port{{Rail: 1, NIC: "mlx5_1", Netdev: "eth1"}}
	for _, tc := range []struct {
		name  string
		heard []lldp.Neighbor
		want  Port
	}{
		{"one neighbor", []lldp.Neighbor{a}, Port{Switch: "leaf-1", SwitchPort: "swp3"}},
		{"two switches", []lldp.Neighbor{a, b}, Port{Switch: "leaf-0", SwitchPort: "swp3",
			Switches: []string{"leaf-0", "leaf-1"}, SwitchPorts: []string{"swp3", "swp3"}}},
		{"two switches, the other first", []lldp.Neighbor{b, a}, Port{Switch: "leaf-0", SwitchPort: "swp3",
			Switches: []string{"leaf-0", "leaf-1"}, SwitchPorts: []string{"swp3", "swp3"}}},
		{"two ports of one switch", []lldp.Neighbor{a2, a}, Port{Switch: "leaf-1", SwitchPort: "swp3",
			Switches: []string{"leaf-1", "leaf-1"}, SwitchPorts: []string{"swp3", "swp4"}}},
		{"two chassis named alike", []lldp.Neighbor{a, twin}, Port{Switch: "0c:42:a1:00:00:01", SwitchPort: "swp3",
			Switches: []string{"0c:42:a1:00:00:01", "0c:42:a1:00:00:09"}, SwitchPorts: []string{"swp3", "swp3"}}},
	} {
		got := WithNeighbors(port, []lldp.Result{{Port: "eth1", Neighbor: &tc.heard[0], Others: tc.heard[1:]}})[0]
		tc.want.Rail, tc.want.NIC, tc.want.Netdev = 1, "mlx5_1", "eth1"
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
	}
	got := WithNeighbors(port, []lldp.Result{{Port: "eth1", Neighbor: &a, Others: []lldp.Neighbor{b}}})[0]
	if heard := got.HeardNeighbors(); strings.Join(heard, ", ") != "leaf-0 port swp3, leaf-1 port swp3" {
		t.Errorf("HeardNeighbors = %q", heard)
	}
	// The annotation keeps them.
	ann, err := EncodePorts([]Port{got})
	if err != nil {
		t.Fatal(err)
	}
	back, err := DecodePorts(ann)
	if err != nil || !cmp.Equal(back, []Port{got}) {
		t.Errorf("annotation round trip: %+v, %v; want %+v", back, err, got)
	}
}

// A port hearing two ports of its own rail's leaf is reported (which
// ports) and still judged by that leaf: nothing else is found on a clean
// cluster. One hearing its leaf and another switch is reported, naming
// both with their ports, and not judged.
func TestAnalyzeReportsAPortHearingTwoNeighbors(t *testing.T) {
	t.Parallel()
	nodes, err := Layout{Design: RailOptimized, Nodes: 8, UnitNodes: 4, Rails: 4}.Generate()
	if err != nil {
		t.Fatal(err)
	}
	n := nodes[5].Name
	p := &nodes[5].Ports[2]
	leaf := p.Switch
	p.Switches, p.SwitchPorts = []string{leaf, leaf}, []string{"swp5", "swp6"}
	rep := Analyze(nodes)
	if len(rep.Findings) != 1 {
		t.Fatalf("findings %+v; want one", rep.Findings)
	}
	f := rep.Findings[0]
	want := "hears 2 neighbors (" + leaf + " port swp5, " + leaf + " port swp6): all on " + leaf
	if f.Kind != KindSeveralNeighbors || f.Node != n || f.Rail != 2 || !strings.Contains(f.Message, want) {
		t.Errorf("finding %+v; want several-neighbors on %s rail 2 saying %q", f, n, want)
	}

	p.Switches, p.SwitchPorts = []string{leaf, "rogue"}, []string{"swp5", "eth0"}
	rep = Analyze(nodes)
	if len(rep.Findings) != 1 || rep.Findings[0].Kind != KindSeveralNeighbors ||
		!strings.Contains(rep.Findings[0].Message, leaf+" port swp5, rogue port eth0): its wiring is not judged") {
		t.Errorf("findings %+v; want one several-neighbors naming both, not judged", rep.Findings)
	}
}
