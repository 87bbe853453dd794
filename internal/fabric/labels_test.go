package fabric

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/validation"
)

// checkLabels fails on a key or value Kubernetes would refuse.
func checkLabels(t *testing.T, labels map[string]string) {
	t.Helper()
	for k, v := range labels {
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			t.Errorf("label key %q: %v", k, errs)
		}
		if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
			t.Errorf("label %s value %q: %v", k, v, errs)
		}
	}
}

// A held neighbor (not heard for a round or two) keeps every label; a
// dead rail (past the hold: LastSwitch only) loses its rail label but
// keeps the node's leaf set, and is named in the degraded-rails label.
func TestLabelsHoldTheLeafSetOfADeadRail(t *testing.T) {
	t.Parallel()
	healthy := railNode("n1", 8).Ports
	want := Labels(healthy)

	held := append([]Port(nil), healthy...)
	held[3].StaleRounds, held[3].NoNeighbor = 2, "port eth3: no LLDP frame within 35s"
	if diff := cmp.Diff(want, Labels(held)); diff != "" {
		t.Errorf("a held neighbor changed the labels (-want +got):\n%s", diff)
	}

	dead := append([]Port(nil), healthy...)
	for _, r := range []int{5, 3} {
		dead[r].Switch, dead[r].LastSwitch, dead[r].NoNeighbor = "", dead[r].Switch, "no LLDP frame"
	}
	got := Labels(dead)
	wantDead := map[string]string{DegradedRailsLabel: "3_5"}
	for k, v := range want {
		if k != RailLabelPrefix+"3" && k != RailLabelPrefix+"5" {
			wantDead[k] = v
		}
	}
	if diff := cmp.Diff(wantDead, got); diff != "" {
		t.Errorf("two dead rails (-want +got):\n%s", diff)
	}
	checkLabels(t, got)

	// A rail that never had a neighbor is not degraded: the node's leaf
	// set is what it has (as before), and no rail is named.
	never := append([]Port(nil), healthy...)
	never[3].Switch = ""
	got = Labels(never)
	if got[LeafSetLabel] == want[LeafSetLabel] || got[DegradedRailsLabel] != "" {
		t.Errorf("a rail never heard: %v; want another leaf set and no degraded rails", got)
	}

	// Of a rail's two ports, a live one keeps the rail from degrading;
	// the first port's switch (live or last) names the leaf set's pair.
	two := append(append([]Port(nil), dead...), Port{Rail: 3, NIC: "mlx5_9", Switch: "other-leaf"})
	got = Labels(two)
	if got[DegradedRailsLabel] != "5" || got[RailLabelPrefix+"3"] != "other-leaf" || got[LeafSetLabel] != want[LeafSetLabel] {
		t.Errorf("rail 3 with a dead and a live port: %v", got)
	}
}

func TestLabelsUnderTopographKeys(t *testing.T) {
	t.Parallel()
	keys, err := SchemeKeys(SchemeTopograph)
	if err != nil {
		t.Fatal(err)
	}
	ports := railNode("n1", 2).Ports
	ports[1].Switch, ports[1].LastSwitch = "", ports[1].Switch
	railyard, topograph := Labels(ports), keys.Labels(ports)
	want := map[string]string{
		RailLabelPrefix + "0": "leaf-0",
		TopographTier0:        railyard[LeafSetLabel],
		DegradedRailsLabel:    "1",
	}
	if diff := cmp.Diff(want, topograph); diff != "" {
		t.Errorf("topograph scheme (-want +got):\n%s", diff)
	}
	for _, k := range []string{RailLabelPrefix + "0", TopographTier0, DegradedRailsLabel} {
		if !keys.PublisherOwns(k) {
			t.Errorf("the publisher does not own %s", k)
		}
	}
	for _, k := range []string{LeafSetLabel, TopographTier1, UnitLabel, "kubernetes.io/hostname"} {
		if keys.PublisherOwns(k) {
			t.Errorf("the publisher owns %s in the topograph scheme", k)
		}
	}
	if _, err := SchemeKeys("volcano"); err == nil {
		t.Error("an unknown scheme was accepted")
	}
}

func TestLabelKeysValidate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		keys LabelKeys
		want string // "" valid
	}{
		{LabelKeys{}, ""},
		{LabelKeys{LeafSet: TopographTier0, Unit: TopographTier1}, ""},
		{LabelKeys{LeafSet: "example.com/leaves"}, ""},
		{LabelKeys{LeafSet: "leaves"}, "no domain prefix"},
		{LabelKeys{Unit: "kubernetes.io/hostname"}, "reserves"},
		{LabelKeys{Unit: "node-role.kubernetes.io/gpu"}, "reserves"},
		{LabelKeys{Unit: "x.k8s.io/unit"}, "reserves"},
		{LabelKeys{LeafSet: "example.com/a b"}, "not a label key"},
		{LabelKeys{LeafSet: "rail.railyard.io/0"}, "another fabric label"},
		{LabelKeys{Unit: DegradedRailsLabel}, "another fabric label"},
		{LabelKeys{LeafSet: UnitLabel}, "want two keys"},
	} {
		err := tc.keys.Validate()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%+v: %v", tc.keys, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%+v: %v, want %q", tc.keys, err, tc.want)
		}
	}
}

func TestRailListFitsALabelValue(t *testing.T) {
	t.Parallel()
	all := make([]int, 64)
	for i := range all {
		all[i] = i
	}
	for _, tc := range []struct {
		rails []int
		want  string
	}{
		{[]int{3}, "3"},
		{[]int{5, 3}, "3_5"},
		{all[:16], "0_1_2_3_4_5_6_7_8_9_10_11_12_13_14_15"},
		{all, "0_1_2_3_4_5_6_7_8_9_10_11_12_13_14_15_16_17_18_19_20_21_22_more"},
	} {
		got := railList(append([]int(nil), tc.rails...))
		if got != tc.want {
			t.Errorf("railList(%v) = %q, want %q", tc.rails, got, tc.want)
		}
		if errs := validation.IsValidLabelValue(got); len(errs) > 0 {
			t.Errorf("railList(%v) = %q: %v", tc.rails, got, errs)
		}
	}
}

// UnitLabels on a generated cluster of four scalable units names each
// node's unit after its first leaf, the same for all its nodes; dead
// rails, a whole dead leaf and a stray cable leave every label as it was;
// a node that never heard a switch has none; and each leaf set sits in
// one unit (the levels nest).
func TestUnitLabelsOfFourScalableUnits(t *testing.T) {
	t.Parallel()
	nodes := generate(t, superPOD)
	want := map[string]string{}
	for i, n := range nodes {
		want[n.Name] = fmt.Sprintf("su%d-leaf0", superPOD.Unit(i)+1)
	}
	if diff := cmp.Diff(want, UnitLabels(nodes)); diff != "" {
		t.Fatalf("clean cluster (-want +got):\n%s", diff)
	}

	faulty := generate(t, superPOD)
	die := func(p *Port) { p.Switch, p.LastSwitch = "", p.Switch }
	die(&faulty[5].Ports[2])   // su1-node05's rail 2
	for n := 64; n < 96; n++ { // su3's whole rail-0 leaf
		die(&faulty[n].Ports[0])
	}
	for r := range faulty[100].Ports { // su4-node04: every rail dead
		die(&faulty[100].Ports[r])
	}
	faulty[40].Ports[6].Switch = "su4-leaf6"                                              // su2-node08: a cable into su4's leaf
	faulty = append(faulty, Node{Name: "cpu-1", Ports: []Port{{Rail: 0, NIC: "mlx5_0"}}}) // never heard anything
	before := fmt.Sprint(faulty)
	got := UnitLabels(faulty)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("faulty cluster (-want +got):\n%s", diff)
	}
	if fmt.Sprint(faulty) != before {
		t.Error("UnitLabels changed its input")
	}

	unitOf := map[string]string{}
	for _, n := range faulty {
		ls := Labels(n.Ports)[LeafSetLabel]
		if ls == "" {
			continue
		}
		if u, ok := unitOf[ls]; ok && u != got[n.Name] {
			t.Errorf("leaf set %s spans units %s and %s", ls, u, got[n.Name])
		}
		unitOf[ls] = got[n.Name]
	}

	racks := generate(t, Layout{Design: TopOfRack, Nodes: 12, UnitNodes: 4, Rails: 8})
	for name, v := range UnitLabels(racks) {
		if want := name[:strings.Index(name, "-")] + "-tor"; v != want {
			t.Errorf("%s: unit %q, want %q", name, v, want)
		}
	}
}
