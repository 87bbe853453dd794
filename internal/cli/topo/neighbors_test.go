package topo

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/railyard-io/railyard/internal/cli/clitest"
	"github.com/railyard-io/railyard/internal/cli/iostreams"
	"github.com/railyard-io/railyard/internal/fabric"
	"github.com/railyard-io/railyard/internal/fakesysfs"
	"github.com/railyard-io/railyard/internal/lldp/lldptest"
	"github.com/railyard-io/railyard/internal/netops/netnstest"
	"github.com/railyard-io/railyard/machines"
)

// TestMain: a child started with clitest.ChildEnviron runs `railyard
// topo` instead of the tests, so a test can run the command inside a
// network namespace (ip netns exec) without building the railyard binary.
func TestMain(m *testing.M) {
	clitest.ExitIfChild(NewCommand)
	os.Exit(m.Run())
}

// TestTopoNeighborsHearsARealLeaf runs `railyard topo --neighbors` inside
// a node's network namespace whose rail-0 NIC netdev (a veth named as the
// RoCE model's tree says) is cabled to a real lldpd playing leaf-rail0;
// the model's other NICs have no netdev there and say so. It listens the
// whole wait (3 s: lldptest's leaf sends every second).
func TestTopoNeighborsHearsARealLeaf(t *testing.T) {
	lldptest.Require(t)
	tree := t.TempDir()
	d, err := machines.Description("roce-8gpu-4nic")
	if err != nil {
		t.Fatal(err)
	}
	if err := fakesysfs.Generate(tree, d, fakesysfs.Options{}); err != nil {
		t.Fatal(err)
	}
	node := filepath.Base(netnstest.NewNetns(t, "nd"))
	leaf := filepath.Base(netnstest.NewNetns(t, "lf"))
	netnstest.IP(t, "-n", node, "link", "add", "enp5s0f0np0", "type", "veth", "peer", "name", "swp7", "netns", leaf)
	netnstest.IP(t, "-n", node, "link", "set", "enp5s0f0np0", "up")
	netnstest.IP(t, "-n", leaf, "link", "set", "swp7", "up")
	lldptest.StartLeaf(t, leaf, "swp7", "leaf-rail0")

	run := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("ip", append([]string{"netns", "exec", node, os.Args[0], "--sysfs", tree, "--neighbors", "3s"}, args...)...)
		cmd.Env = clitest.ChildEnviron()
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("topo --neighbors %v: %v\n%s%s", args, err, out, stderr.String())
		}
		return string(out)
	}
	var v struct {
		Neighbors []fabric.Port `json:"neighbors"`
	}
	out := run("--json")
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("--json: %v\n%s", err, out)
	}
	if len(v.Neighbors) != 4 {
		t.Fatalf("%d neighbors, want the model's 4 NICs: %s", len(v.Neighbors), out)
	}
	got := v.Neighbors[0]
	if got.Rail != 0 || got.Netdev != "enp5s0f0np0" || got.Switch != "leaf-rail0" || got.SwitchPort != "swp7" {
		t.Errorf("rail 0: %+v, want leaf-rail0 port swp7", got)
	}
	for _, p := range v.Neighbors[1:] {
		if p.Switch != "" || !strings.Contains(p.NoNeighbor, "no such netdev") {
			t.Errorf("rail %d: %+v, want no neighbor: its netdev is not in the namespace", p.Rail, p)
		}
	}
	if text := run(); !strings.Contains(text, "leaf-rail0") || !strings.Contains(text, "Neighbors (LLDP") {
		t.Errorf("table output lacks the neighbor:\n%s", text)
	}
}

func TestTopoNeighborsRefusesAWaitOverTenMinutes(t *testing.T) {
	t.Parallel()
	var out, errOut bytes.Buffer
	cmd := NewCommand(iostreams.Streams{Out: &out, ErrOut: &errOut})
	cmd.SetArgs([]string{"--machine", "roce-8gpu-4nic", "--neighbors", "11m"})
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	if err := cmd.ExecuteContext(context.Background()); err == nil || !strings.Contains(err.Error(), "--neighbors 11m0s") {
		t.Errorf("--neighbors 11m: %v, want it refused", err)
	}
}
