package fabric

import (
	"strings"
	"testing"

	"github.com/railyard-io/railyard/internal/cli/clitest"
	"github.com/railyard-io/railyard/internal/fabric"
)

func TestLabelUnitsAndPublishRefuseBadFlags(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{args: []string{"label-units", "--watch", "--dry-run"}, want: "mutually exclusive"},
		{args: []string{"label-units", "--watch", "--interval", "1s"}, want: "--interval 1s"},
		{args: []string{"label-units", "--labels", "volcano"}, want: `label scheme "volcano"`},
		{args: []string{"label-units", "--unit-label", "kubernetes.io/hostname"}, want: "reserves"},
		{args: []string{"label-units", "--labels", "topograph", "--unit-label", fabric.TopographTier0}, want: "want two keys"},
		{args: []string{"publish", "--dry-run", "--hold-rounds", "-1"}, want: "--hold-rounds -1"},
		{args: []string{"publish", "--dry-run", "--hold-rounds", "1000"}, want: "--hold-rounds 1000"},
		{args: []string{"publish", "--dry-run", "--leaf-set-label", "leaf-set"}, want: "no domain prefix"},
	} {
		_, _, err := clitest.Run(t, NewCommand, "", tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: err = %v, want %q", tc.args, err, tc.want)
		}
	}
}

// `railyard fabric` judges a held neighbor as cabled and a degraded rail
// as dark, and names both after the table.
func TestFabricNamesHeldAndDegradedPorts(t *testing.T) {
	t.Parallel()
	nodes := layout(t, fabric.Layout{Design: fabric.RailOptimized, Nodes: 4, Rails: 4})
	nodes[1].Ports[2].StaleRounds, nodes[1].Ports[2].NoNeighbor = 2, "port ens3np0: no LLDP frame within 35s"
	p := &nodes[2].Ports[3]
	p.Switch, p.LastSwitch, p.NoNeighbor = "", p.Switch, "port ens4np0: no LLDP frame within 35s"
	out, _, err := clitest.Run(t, NewCommand, "", "--from", writeNodes(t, nodes...))
	if code := exitCode(t, err); code != 2 {
		t.Fatalf("exit %d, want 2 (the degraded port is dark)\n%s", code, out)
	}
	for _, want := range []string{
		"Held (not heard lately, still counted as cabled): su1-node01 rail 2 (su1-leaf2, 2 rounds)",
		"Degraded (no neighbor past the hold; the node keeps its leaf set and unit): su1-node02 rail 3 (last on su1-leaf3)",
		"su1-node02: ",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "su1-node01: ") {
		t.Errorf("the held port was judged as dark:\n%s", out)
	}
}
