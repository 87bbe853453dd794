package schedtopo_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/railyard-io/railyard/internal/fabric"
	"github.com/railyard-io/railyard/internal/schedtopo"
)

func node(name, unit, leafSet string) schedtopo.Node {
	l := map[string]string{schedtopo.HostnameLabel: name}
	if unit != "" {
		l[fabric.UnitLabel] = unit
	}
	if leafSet != "" {
		l[fabric.LeafSetLabel] = leafSet
	}
	return schedtopo.Node{Name: name, Labels: l}
}

func TestGroupCountsDomainsAndMissingLabels(t *testing.T) {
	t.Parallel()
	d := schedtopo.Group([]schedtopo.Node{
		node("n3", "su1", "ls-a"), node("n1", "su1", "ls-a"), node("n2", "su1", "ls-b"),
		node("n4", "su2", "ls-c"), node("n5", "", "ls-c"), node("n6", "su2", ""), node("n7", "", ""),
	}, fabric.LabelKeys{})
	want := map[string]*schedtopo.LeafSet{
		"ls-a": {Value: "ls-a", Nodes: []string{"n1", "n3"}, Units: []string{"su1"}},
		"ls-b": {Value: "ls-b", Nodes: []string{"n2"}, Units: []string{"su1"}},
		"ls-c": {Value: "ls-c", Nodes: []string{"n4", "n5"}, Units: []string{"", "su2"}},
	}
	if diff := cmp.Diff(want, d.LeafSets); diff != "" {
		t.Errorf("leaf sets (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string][]string{"su1": {"n1", "n2", "n3"}, "su2": {"n4", "n6"}}, d.Units); diff != "" {
		t.Errorf("units (-want +got):\n%s", diff)
	}
	if !cmp.Equal(d.WithoutLeafSet, []string{"n6", "n7"}) || !cmp.Equal(d.WithoutUnit, []string{"n5", "n7"}) || d.Nodes != 7 {
		t.Errorf("without leaf set %v, without unit %v, %d nodes", d.WithoutLeafSet, d.WithoutUnit, d.Nodes)
	}
	// n5 has no unit: its leaf set counts as in two units ("" and su2).
	if c := d.Conflicts(); len(c) != 1 || !strings.Contains(c[0], "ls-c") {
		t.Errorf("conflicts %q", c)
	}
	for _, tc := range []struct {
		pods int
		want string
	}{{1, fabric.LeafSetLabel}, {2, fabric.LeafSetLabel}, {3, fabric.UnitLabel}, {4, ""}} {
		got, err := d.Level(tc.pods)
		if got != tc.want || (tc.want == "") != errors.Is(err, schedtopo.ErrTopology) {
			t.Errorf("Level(%d) = %q, %v; want %q", tc.pods, got, err, tc.want)
		}
	}
	if d.Largest(schedtopo.HostnameLabel) != 1 {
		t.Errorf("largest host domain %d", d.Largest(schedtopo.HostnameLabel))
	}
}

func TestHyperNodesNestLeafSetsInUnits(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("Spine.", 60) // 360 bytes, upper case
	d := schedtopo.Group([]schedtopo.Node{
		node("n1", "su1", "ls-a"), node("n2", "su1", "ls-b"), node("n3", long, "Leaf_07"), node("n4", "", "ls-z"),
	}, fabric.LabelKeys{})
	objs, err := schedtopo.HyperNodes(d, "rf-")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	tiers := map[string]schedtopo.HyperNodeSpec{}
	for _, o := range objs {
		if errs := validation.IsDNS1123Subdomain(o.Metadata.Name); len(errs) > 0 {
			t.Errorf("%s: %v", o.Metadata.Name, errs)
		}
		got = append(got, o.Metadata.Name)
		tiers[o.Metadata.Name] = o.Spec.(schedtopo.HyperNodeSpec)
	}
	// Units first, then leaf sets, each by value: the long unit cut to a
	// name with a digest, Leaf_07 made lower case with one.
	if len(got) != 6 || !strings.HasPrefix(got[0], "rf-unit-spine.spine.") || got[1] != "rf-unit-su1" ||
		!strings.HasPrefix(got[2], "rf-ls-leaf-07-") || got[3] != "rf-ls-a" || got[5] != "rf-ls-z" {
		t.Errorf("names %q", got)
	}
	if diff := cmp.Diff([]string{"rf-ls-a", "rf-ls-b"}, []string{tiers["rf-unit-su1"].Members[0].Selector.ExactMatch.Name, tiers["rf-unit-su1"].Members[1].Selector.ExactMatch.Name}); diff != "" {
		t.Errorf("su1's members (-want +got):\n%s", diff)
	}
	if m := tiers["rf-ls-z"]; m.Tier != 1 || m.Members[0].Selector.LabelMatch.MatchLabels[fabric.LeafSetLabel] != "ls-z" {
		t.Errorf("ls-z: %+v", m)
	}

	// "ls-x" and "x" would both be rf-ls-x.
	dup := schedtopo.Group([]schedtopo.Node{node("n1", "u", "ls-x"), node("n2", "u", "x")}, fabric.LabelKeys{})
	if _, err := schedtopo.HyperNodes(dup, "rf-"); !errors.Is(err, schedtopo.ErrTopology) {
		t.Errorf("two values, one name: %v", err)
	}
	bad := schedtopo.Group([]schedtopo.Node{node("n1", "u1", "ls-x"), node("n2", "u2", "ls-x")}, fabric.LabelKeys{})
	if _, err := schedtopo.HyperNodes(bad, "rf-"); !errors.Is(err, schedtopo.ErrTopology) {
		t.Errorf("a leaf set in two units: %v", err)
	}
}

func TestKueueNeedsANodeLabel(t *testing.T) {
	t.Parallel()
	if _, err := schedtopo.Kueue("t", "f", fabric.LabelKeys{}, nil); err == nil {
		t.Error("a flavor with a topology and no node label was built")
	}
}
