//go:build e2e

package multinode

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/railyard-io/railyard/internal/fabric"
	"github.com/railyard-io/railyard/internal/lldp/lldptest"
	"github.com/railyard-io/railyard/test/e2e/framework"
)

// TestFabricLLDPFindsASwappedCable: real lldpd (Debian's) plays each rail's
// leaf switch in the cluster's fabric namespace, speaking LLDP on the
// leaf's ports (Linux bridges do not forward LLDP). `railyard fabric
// publish`, run in each GPU node's network namespace (one round per run,
// --hold-rounds 1, the hold counted from the Node's annotation as a
// --watch publisher's next round counts it), hears every rail's leaf on
// the NIC netdev cabled to it and labels its Node through the real
// apiserver; `railyard fabric` then finds the wiring clean and the rails
// isolated, and `railyard fabric label-units` gives each node its unit.
// A leaf's lldpd paused for one round (no shutdown frame) changes no
// label: the ports are held, marked stale in the annotation. A node's port
// dead (its leaf port down) past the hold loses its rail label and gains
// railyard.io/degraded-rails, keeps its leaf set and unit, and is found
// dark; back up, every label returns. A second lldpd on one node's port
// (a rogue LLDP sender) makes it report both neighbors, a warning, while
// its rail label stays. With gpu-2's rail-0 and rail-1
// cables swapped (its ports moved between the two leaves), a round finds
// the swap and exits 2.
// Faked: the nodes' NICs are veths, and their fake trees (dgx-h100's,
// InfiniBand) are copied with the ports' link layer set to Ethernet, as
// the veths carry Ethernet (LLDP runs on RoCE ports, not InfiniBand).
func TestFabricLLDPFindsASwappedCable(t *testing.T) {
	if cluster == nil {
		t.Skip(skip)
	}
	lldptest.Require(t)
	ctx := framework.Context(t, 5*time.Minute)
	repo, err := framework.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(envOr("RAILYARD_E2E_BIN", filepath.Join(repo, "bin")), "railyard")
	info := cluster.Info
	gpus := info.GPUNodes()
	if len(gpus) < 2 || len(info.Rails) < 2 {
		t.Skipf("needs 2 GPU nodes and 2 rails, has %d and %d", len(gpus), len(info.Rails))
	}
	fabricNS := fmt.Sprintf("ry-fabric-%d", os.Getpid())
	if out, err := exec.Command("ip", "netns", "attach", fabricNS, itoa(info.FabricPID)).CombinedOutput(); err != nil {
		t.Fatalf("naming the fabric namespace: %v: %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "delete", fabricNS).Run() })
	roce := map[string]string{}
	for _, n := range gpus {
		roce[n.Name] = roceCopy(t, filepath.Join(n.Dir, "machine", "sysfs"))
		// A node's RoCE ports are up (an operator's network configuration);
		// the cluster leaves its NIC netdevs down until a pod takes one.
		for _, netdev := range n.Rails {
			setLink(t, n, netdev, "up")
			t.Cleanup(func() { setLink(t, n, netdev, "down") })
		}
	}
	// wiring[r] lists the fabric ports lldpd serves as rail r's leaf.
	wiring := func(swap bool) map[int][]string {
		w := map[int][]string{}
		for _, r := range info.Rails {
			for i, n := range gpus {
				rail := r.Index
				if swap && i == 1 && rail <= 1 {
					rail = 1 - rail
				}
				w[rail] = append(w[rail], fabricPort(n, r.Index))
			}
		}
		return w
	}
	// publish runs one round of the real publisher on every GPU node at
	// once, each in its node's network namespace: it listens the whole
	// --wait, 4 s, which hears lldpd's 1 s transmit interval several times; the hold (1 round) counts from
	// the Node's annotation, as a --watch publisher's next round does.
	publish := func(t *testing.T) string {
		t.Helper()
		outs, errs := make([][]byte, len(gpus)), make([]error, len(gpus))
		var wg sync.WaitGroup
		for i, n := range gpus {
			wg.Add(1)
			go func() {
				defer wg.Done()
				cmd := exec.CommandContext(ctx, "nsenter", "--target", itoa(n.PID), "--net", "--", bin, "fabric", "publish",
					"--node", n.Name, "--sysfs", roce[n.Name], "--wait", "4s", "--hold-rounds", "1", "--kubeconfig", info.Kubeconfig)
				outs[i], errs[i] = cmd.CombinedOutput()
			}()
		}
		wg.Wait()
		for i, n := range gpus {
			if errs[i] != nil {
				t.Fatalf("fabric publish on %s: %v\n%s", n.Name, errs[i], outs[i])
			}
			t.Logf("%s", bytes.TrimSpace(outs[i]))
		}
		return string(bytes.Join(outs, nil))
	}
	report := func(t *testing.T) (fabric.Report, int) {
		t.Helper()
		cmd := exec.CommandContext(ctx, bin, "fabric", "--kubeconfig", info.Kubeconfig, "--selector", "railyard.io/rdma=true", "--json")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		code := 0
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			code = exit.ExitCode()
		} else if err != nil {
			t.Fatalf("railyard fabric: %v", err)
		}
		var rep fabric.Report
		if err := json.Unmarshal(out, &rep); err != nil {
			t.Fatalf("railyard fabric --json: %v\n%s%s", err, out, stderr.String())
		}
		return rep, code
	}

	// labelUnits runs one pass of the real unit writer over the GPU nodes.
	labelUnits := func(t *testing.T) {
		t.Helper()
		out, err := exec.CommandContext(ctx, bin, "fabric", "label-units", "--kubeconfig", info.Kubeconfig, "--selector", "railyard.io/rdma=true").CombinedOutput()
		if err != nil {
			t.Fatalf("railyard fabric label-units: %v\n%s", err, out)
		}
		t.Logf("%s", bytes.TrimSpace(out))
	}

	t.Run("as cabled", func(t *testing.T) {
		leaves := map[int]*lldptest.Leaf{}
		for r, ports := range wiring(false) {
			leaves[r] = lldptest.StartPausableLeaf(t, fabricNS, strings.Join(ports, ","), info.Rails[r].Leaf)
		}
		publish(t)
		node, err := cluster.Client.CoreV1().Nodes().Get(ctx, gpus[0].Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range info.Rails {
			if got := node.Labels[fmt.Sprintf("rail.railyard.io/%d", r.Index)]; got != r.Leaf {
				t.Errorf("%s: label rail.railyard.io/%d = %q, want %s", gpus[0].Name, r.Index, got, r.Leaf)
			}
		}
		rep, code := report(t)
		if code != 0 || len(rep.Findings) != 0 || !rep.Isolated {
			t.Errorf("railyard fabric: exit %d, isolated %v, findings %+v; want 0, true, none", code, rep.Isolated, rep.Findings)
		}
		if t.Failed() {
			return
		}
		labelUnits(t)
		before := fabricLabels(t, ctx, gpus)
		for _, n := range gpus {
			if before[n.Name][fabric.UnitLabel] == "" || before[n.Name][fabric.LeafSetLabel] == "" {
				t.Fatalf("%s: labels %v; want a unit (label-units) and a leaf set", n.Name, before[n.Name])
			}
		}

		// A leaf's lldpd silent for one round (paused: no shutdown frame)
		// is held: every node keeps its labels, and the annotation marks
		// the rail's ports stale for a round; heard again, they are fresh.
		t.Run("a leaf silent for one round is held", func(t *testing.T) {
			const r = 2
			leaves[r].Pause()
			publish(t)
			leaves[r].Resume()
			if got := fabricLabels(t, ctx, gpus); !maps.EqualFunc(got, before, maps.Equal) {
				t.Errorf("labels after a silent round: %v; want them unchanged: %v", got, before)
			}
			for _, n := range gpus {
				p := annotatedPort(t, ctx, n.Name, r)
				if p.Switch != info.Rails[r].Leaf || p.StaleRounds != 1 || !strings.Contains(p.NoNeighbor, "no LLDP frame") {
					t.Errorf("%s rail %d after a silent round: %+v; want %s held, staleRounds 1, no LLDP frame said", n.Name, r, p, info.Rails[r].Leaf)
				}
			}
			publish(t)
			for _, n := range gpus {
				if p := annotatedPort(t, ctx, n.Name, r); p.Switch != info.Rails[r].Leaf || p.StaleRounds != 0 || p.NoNeighbor != "" {
					t.Errorf("%s rail %d heard again: %+v; want %s fresh", n.Name, r, p, info.Rails[r].Leaf)
				}
			}
			if got := fabricLabels(t, ctx, gpus); !maps.EqualFunc(got, before, maps.Equal) {
				t.Errorf("labels heard again: %v; want %v", got, before)
			}
		})

		// gpu-1's rail-3 port dead (its leaf port down: the NIC has no
		// carrier) past the hold of one round: the rail label goes, the
		// node gains railyard.io/degraded-rails and keeps its leaf set and
		// its unit (label-units), railyard fabric finds the dark port; the
		// port back, every label is as before.
		t.Run("a dead port past the hold degrades its rail", func(t *testing.T) {
			const r = 3
			n := gpus[0]
			port := fabricPort(n, r)
			link := func(state string) {
				if out, err := exec.Command("ip", "-n", fabricNS, "link", "set", port, state).CombinedOutput(); err != nil {
					t.Fatalf("ip link set %s %s: %v: %s", port, state, err, out)
				}
			}
			if nic := annotatedPort(t, ctx, n.Name, r).NIC; fabric.Leaves(annotatedPorts(t, ctx, n.Name))[nic] != info.Rails[r].Leaf {
				t.Errorf("%s: NIC %s has DRA leaf %q before the port died; want %s", n.Name, nic, fabric.Leaves(annotatedPorts(t, ctx, n.Name))[nic], info.Rails[r].Leaf)
			}
			link("down")
			t.Cleanup(func() { link("up") })
			publish(t) // held
			if got := fabricLabels(t, ctx, gpus); !maps.EqualFunc(got, before, maps.Equal) {
				t.Errorf("labels after one dead round (held): %v; want %v", got, before)
			}
			publish(t) // past the hold
			labelUnits(t)
			got := fabricLabels(t, ctx, gpus)
			want := maps.Clone(before[n.Name])
			delete(want, fmt.Sprintf("rail.railyard.io/%d", r))
			want[fabric.DegradedRailsLabel] = itoa(r)
			if !maps.Equal(got[n.Name], want) {
				t.Errorf("%s past the hold: labels %v; want %v (rail %d's label gone, degraded-rails %d, leaf set and unit kept)", n.Name, got[n.Name], want, r, r)
			}
			if !maps.Equal(got[gpus[1].Name], before[gpus[1].Name]) {
				t.Errorf("%s: labels %v; want them unchanged: %v", gpus[1].Name, got[gpus[1].Name], before[gpus[1].Name])
			}
			p := annotatedPort(t, ctx, n.Name, r)
			if p.Switch != "" || p.LastSwitch != info.Rails[r].Leaf || !strings.Contains(p.NoNeighbor, "no carrier") {
				t.Errorf("%s rail %d past the hold: %+v; want no switch, lastSwitch %s, no carrier said", n.Name, r, p, info.Rails[r].Leaf)
			}
			// The publisher taints nothing (a NIC's DRA taint is the agent's,
			// from its link and counters); the leaf the agent publishes as
			// the NIC's railyard.io/leaf attribute comes from this
			// annotation through fabric.Leaves, which no longer names it.
			if leaf, ok := fabric.Leaves(annotatedPorts(t, ctx, n.Name))[p.NIC]; ok {
				t.Errorf("%s: NIC %s still has the DRA leaf %q past the hold", n.Name, p.NIC, leaf)
			}
			rep, code := report(t)
			if code != 2 || len(rep.Findings) != 1 || rep.Findings[0].Kind != fabric.KindDark || rep.Findings[0].Node != n.Name || rep.Findings[0].Rail != r {
				t.Errorf("railyard fabric: exit %d, findings %+v; want 2 and one dark port, %s rail %d", code, rep.Findings, n.Name, r)
			}
			link("up")
			publish(t)
			labelUnits(t)
			if got := fabricLabels(t, ctx, gpus); !maps.EqualFunc(got, before, maps.Equal) {
				t.Errorf("labels with the port back: %v; want %v", got, before)
			}
		})

		// A second LLDP sender on gpu-1's rail-5 link (another lldpd on the
		// leaf's port, "rogue") for one round: the port reports both
		// neighbors (the publisher warns, the annotation lists both with
		// their ports, railyard fabric warns, exit 1) and its rail label
		// keeps the leaf it named; the rogue gone, the port is as before.
		t.Run("a port hearing two neighbors", func(t *testing.T) {
			const r = 5
			n := gpus[0]
			leaf := info.Rails[r].Leaf
			t.Run("the rogue speaking", func(t *testing.T) {
				lldptest.StartLeaf(t, fabricNS, fabricPort(n, r), "rogue")
				out := publish(t)
				if !strings.Contains(out, "hears 2 neighbors") || !strings.Contains(out, "rogue port "+fabricPort(n, r)) {
					t.Errorf("publish said nothing of rail %d's two neighbors:\n%s", r, out)
				}
				p := annotatedPort(t, ctx, n.Name, r)
				if p.Switch != leaf || !slices.Equal(p.Switches, []string{leaf, "rogue"}) && !slices.Equal(p.Switches, []string{"rogue", leaf}) ||
					len(p.SwitchPorts) != 2 {
					t.Errorf("%s rail %d: %+v; want %s published and both neighbors listed with their ports", n.Name, r, p, leaf)
				}
				if got := fabricLabels(t, ctx, gpus); !maps.EqualFunc(got, before, maps.Equal) {
					t.Errorf("labels with a rogue on rail %d: %v; want them unchanged: %v", r, got, before)
				}
				rep, code := report(t)
				if code != 1 || len(rep.Findings) != 1 || rep.Findings[0].Kind != fabric.KindSeveralNeighbors || rep.Findings[0].Node != n.Name ||
					rep.Findings[0].Rail != r || !strings.Contains(rep.Findings[0].Message, "rogue port") {
					t.Errorf("railyard fabric: exit %d, findings %+v; want 1 and one several-neighbors on %s rail %d naming the rogue", code, rep.Findings, n.Name, r)
				}
			})
			publish(t)
			if p := annotatedPort(t, ctx, n.Name, r); p.Switch != leaf || p.Switches != nil || p.SwitchPorts != nil {
				t.Errorf("%s rail %d, the rogue gone: %+v; want %s alone", n.Name, r, p, leaf)
			}
			if rep, code := report(t); code != 0 || len(rep.Findings) != 0 {
				t.Errorf("railyard fabric, the rogue gone: exit %d, findings %+v; want 0, none", code, rep.Findings)
			}
		})
	})
	if t.Failed() {
		return
	}

	// Swap gpu-2's rail-0 and rail-1 cables: its ports change leaves.
	second := gpus[1]
	p0, p1 := fabricPort(second, 0), fabricPort(second, 1)
	move := func(port, leaf string) {
		if out, err := exec.Command("ip", "-n", fabricNS, "link", "set", port, "master", leaf).CombinedOutput(); err != nil {
			t.Fatalf("moving %s to %s: %v: %s", port, leaf, err, out)
		}
	}
	move(p0, info.Rails[1].Leaf)
	move(p1, info.Rails[0].Leaf)
	t.Cleanup(func() {
		move(p0, info.Rails[0].Leaf)
		move(p1, info.Rails[1].Leaf)
	})
	t.Run("gpu-2's rails 0 and 1 swapped", func(t *testing.T) {
		for r, ports := range wiring(true) {
			lldptest.StartLeaf(t, fabricNS, strings.Join(ports, ","), info.Rails[r].Leaf)
		}
		publish(t)
		rep, code := report(t)
		if code != 2 {
			t.Errorf("railyard fabric: exit %d, want 2 (failures)", code)
		}
		swapped := map[int]bool{}
		for _, f := range rep.Findings {
			if f.Node == second.Name && f.Severity == fabric.Fail && strings.Contains(f.Message, "the leaf of rail") {
				swapped[f.Rail] = true
			}
		}
		if !swapped[0] || !swapped[1] || len(rep.Findings) != 2 {
			t.Errorf("findings %+v; want %s's rails 0 and 1 reported as swapped, and nothing else", rep.Findings, second.Name)
		}
	})
}

// setLink sets a netdev of node n up or down in the node's namespace.
func setLink(t *testing.T, n framework.NodeInfo, netdev, state string) {
	t.Helper()
	if out, err := exec.Command("nsenter", "--target", itoa(n.PID), "--net", "--", "ip", "link", "set", netdev, state).CombinedOutput(); err != nil {
		t.Errorf("%s: ip link set %s %s: %v: %s", n.Name, netdev, state, err, out)
	}
}

// roceCopy copies a node's fake sysfs tree (symlinks as symlinks) and sets
// every RDMA port's link layer to Ethernet in the copy.
func roceCopy(t *testing.T, tree string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "sysfs")
	if out, err := exec.Command("cp", "-a", tree, dst).CombinedOutput(); err != nil {
		t.Fatalf("copying %s: %v: %s", tree, err, out)
	}
	n := 0
	err := filepath.WalkDir(filepath.Join(dst, "devices"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.Type()&fs.ModeSymlink != 0 || d.Name() != "link_layer" || filepath.Base(filepath.Dir(filepath.Dir(p))) != "ports" {
			return err
		}
		n++
		return os.WriteFile(p, []byte("Ethernet\n"), 0o644)
	})
	if err != nil || n == 0 {
		t.Fatalf("setting Ethernet link layers in %s: %d ports, %v", dst, n, err)
	}
	return dst
}

// fabricLabels returns each node's fabric labels: the rail labels, the
// leaf set, the unit and the degraded rails.
func fabricLabels(t *testing.T, ctx context.Context, nodes []framework.NodeInfo) map[string]map[string]string {
	t.Helper()
	out := map[string]map[string]string{}
	for _, n := range nodes {
		node, err := cluster.Client.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		out[n.Name] = map[string]string{}
		for k, v := range node.Labels {
			if strings.HasPrefix(k, fabric.RailLabelPrefix) || k == fabric.LeafSetLabel || k == fabric.UnitLabel || k == fabric.DegradedRailsLabel {
				out[n.Name][k] = v
			}
		}
	}
	return out
}

// annotatedPorts returns a node's ports annotation.
func annotatedPorts(t *testing.T, ctx context.Context, node string) []fabric.Port {
	t.Helper()
	n, err := cluster.Client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ports, err := fabric.DecodePorts(n.Annotations[fabric.PortsAnnotation])
	if err != nil {
		t.Fatalf("%s: %v", node, err)
	}
	return ports
}

// annotatedPort returns the port of rail r in a node's ports annotation.
func annotatedPort(t *testing.T, ctx context.Context, node string, r int) fabric.Port {
	t.Helper()
	for _, p := range annotatedPorts(t, ctx, node) {
		if p.Rail == r {
			return p
		}
	}
	t.Fatalf("%s: no port of rail %d in %s", node, r, fabric.PortsAnnotation)
	return fabric.Port{}
}
