package fabric

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/railyard-io/railyard/internal/cli/clitest"
	"github.com/railyard-io/railyard/internal/cli/iostreams"
	"github.com/railyard-io/railyard/internal/fabric"
)

func layout(t *testing.T, l fabric.Layout) []fabric.Node {
	t.Helper()
	nodes, err := l.Generate()
	if err != nil {
		t.Fatal(err)
	}
	return nodes
}

// exitCode is the status the command would exit with.
func exitCode(t *testing.T, err error) int {
	t.Helper()
	var exit *iostreams.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &exit):
		return exit.ExitCode()
	}
	t.Fatalf("err = %v, want nil or an exit status", err)
	return -1
}

// Four DGX SuperPOD scalable units, each rail with a leaf per unit: clean,
// then with one swapped cable in the third unit, reported as a swap
// (exit 2) on that node's two rails only.
func TestFabricJudgesEachScalableUnit(t *testing.T) {
	t.Parallel()
	nodes := layout(t, fabric.Layout{Design: fabric.RailOptimized, Nodes: 128, UnitNodes: 32, Rails: 8})
	out, _, err := clitest.Run(t, NewCommand, "", "--from", writeNodes(t, nodes...))
	if code := exitCode(t, err); code != 0 {
		t.Fatalf("clean units: exit %d\n%s", code, out)
	}
	for _, want := range []string{"4 units (rail-optimized):", "UNIT  DESIGN", "su3-node05  3     su3-leaf0", "one leaf per rail in each of 4 units", "No findings."} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}

	p := nodes[2*32+5].Ports // su3-node05
	p[2].Switch, p[5].Switch = p[5].Switch, p[2].Switch
	path := writeNodes(t, nodes...)
	out, _, err = clitest.Run(t, NewCommand, "", "--from", path)
	if code := exitCode(t, err); code != 2 {
		t.Fatalf("a swap: exit %d, want 2\n%s", code, out)
	}
	for _, want := range []string{"su3-leaf5 !", "FAIL  su3-node05: rail 2 NIC mlx5_2 reaches su3-leaf5", "swapped cable"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	out, _, err = clitest.Run(t, NewCommand, "", "--from", path, "--json")
	if code := exitCode(t, err); code != 2 {
		t.Fatalf("--json: exit %d", code)
	}
	var rep fabric.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("--json output: %v\n%s", err, out)
	}
	var got []string
	for _, f := range rep.Findings {
		got = append(got, f.Node+" "+string(f.Kind)+" "+f.NIC)
	}
	if diff := cmp.Diff([]string{"su3-node05 swap mlx5_2", "su3-node05 swap mlx5_5"}, got); diff != "" {
		t.Errorf("findings (-want +got):\n%s", diff)
	}
	if rep.Design != fabric.RailOptimized || !rep.Isolated || len(rep.Units) != 4 || rep.Units[2].Rails[5].Leaf != "su3-leaf5" || rep.Rails[5].Leaf != "" {
		t.Errorf("design %s, isolated %v, %d units, unit 3 %+v, rail 5's leaf %q", rep.Design, rep.Isolated, len(rep.Units), rep.Units[2].Rails, rep.Rails[5].Leaf)
	}
}

// A top-of-rack cluster is not miswired and not isolated.
func TestFabricTopOfRack(t *testing.T) {
	t.Parallel()
	nodes := layout(t, fabric.Layout{Design: fabric.TopOfRack, Nodes: 224, UnitNodes: 4, Rails: 8})
	out, _, err := clitest.Run(t, NewCommand, "", "--from", writeNodes(t, nodes...), "--json")
	if code := exitCode(t, err); code != 0 {
		t.Fatalf("exit %d\n%s", code, out)
	}
	var rep fabric.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Design != fabric.TopOfRack || rep.Isolated || len(rep.Units) != 56 || len(rep.Findings) != 0 {
		t.Errorf("design %s, isolated %v, %d units, findings %+v; want top-of-rack, false, 56, none", rep.Design, rep.Isolated, len(rep.Units), rep.Findings)
	}
	out, _, _ = clitest.Run(t, NewCommand, "", "--from", writeNodes(t, nodes...))
	if !strings.Contains(out, "Top of rack") || strings.Contains(out, "isolated") {
		t.Errorf("advice:\n%s", out)
	}
}

// No port with a neighbor: one warning, and no advice drawn from it.
func TestFabricWithoutNeighbors(t *testing.T) {
	t.Parallel()
	nodes := []fabric.Node{node("gpu-1", "", ""), node("gpu-2", "", "")}
	out, _, err := clitest.Run(t, NewCommand, "", "--from", writeNodes(t, nodes...))
	if code := exitCode(t, err); code != 1 {
		t.Fatalf("exit %d, want 1\n%s", code, out)
	}
	if strings.Count(out, "WARN") != 1 || !strings.Contains(out, "no rail NIC of the 2 nodes has a neighbor") ||
		strings.Contains(out, "isolated") || strings.Contains(out, "NCCL") {
		t.Errorf("output:\n%s", out)
	}
}

// Switch names come from LLDP frames anyone on the link can send: the
// table escapes what would steer the terminal.
func TestFabricEscapesNames(t *testing.T) {
	t.Parallel()
	evil := "leaf\x1b]0;owned\x07\u202e1"
	path := writeNodes(t, node("gpu-1", "leaf-0", "leaf-1"), node("gpu-2", "leaf-0", "leaf-1"), node("gpu-3\x1b[2J", evil, "leaf-1"))
	out, _, _ := clitest.Run(t, NewCommand, "", "--from", path)
	if strings.ContainsAny(out, "\x1b\x07\u202e") {
		t.Errorf("output holds control characters:\n%q", out)
	}
	for _, want := range []string{`leaf\x1b]0;owned\x07\u202e1 !`, `gpu-3\x1b[2J`, `reaches leaf\x1b]0;owned\x07\u202e1`} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}
