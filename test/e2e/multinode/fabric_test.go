//go:build e2e

package multinode

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
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
// publish`, run in each GPU node's network namespace, hears every rail's
// leaf on the NIC netdev cabled to it and labels its Node through the real
// apiserver; `railyard fabric` then finds the wiring clean and the rails
// isolated. With gpu-2's rail-0 and rail-1 cables swapped (its ports moved
// between the two leaves), a second round finds the swap and exits 2.
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
	publish := func(t *testing.T) {
		t.Helper()
		for _, n := range gpus {
			cmd := exec.CommandContext(ctx, "nsenter", "--target", itoa(n.PID), "--net", "--", bin, "fabric", "publish",
				"--node", n.Name, "--sysfs", roce[n.Name], "--wait", "20s", "--kubeconfig", info.Kubeconfig)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("fabric publish on %s: %v\n%s", n.Name, err, out)
			}
			t.Logf("%s", bytes.TrimSpace(out))
		}
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

	t.Run("as cabled", func(t *testing.T) {
		for r, ports := range wiring(false) {
			lldptest.StartLeaf(t, fabricNS, strings.Join(ports, ","), info.Rails[r].Leaf)
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
