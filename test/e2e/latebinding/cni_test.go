//go:build e2e

package latebinding

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/railyard-io/railyard/internal/binding"
	"github.com/railyard-io/railyard/internal/exectest"
	"github.com/railyard-io/railyard/internal/netops/netnstest"
	"github.com/railyard-io/railyard/test/e2e/framework"
)

// TestLateBindingThroughContainerdCNI: no Multus. containerd's own CRI
// runs a second CNI network (max_conf_num 2) whose only plugin is
// railyard-cni naming the sandbox pool by resourceName. At sandbox
// creation railyard-cni reads the pod's tokens and GPUs from the real
// kubelet's PodResources (its no-gRPC client), binds them near the GPUs
// and moves the bound PF's netdev into the pod as eth1 with an address
// from the real host-local; the container then gets the same PF through
// CDI. Deleting the pod runs DEL, which returns the netdev under its name
// and releases the bindings. The pool hands out whole PFs: a VF's
// settings are read through its PF's SR-IOV netlink API, which a veth does
// not have (the VM lab, hack/vm, runs the VF path on real VFs). Faked: the
// sysfs tree, the PF netdevs (veths named like the PFs; no RDMA subsystem
// here, so "rdma": false), the GPU plugin (a stand-in, named so).
func TestLateBindingThroughContainerdCNI(t *testing.T) {
	c := suite.Cluster(t)
	netnstest.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	n, _ := startNode(ctx, t, c, "pf")

	// Every PF's netdev, on the host, as a veth named like it.
	peer := netnstest.NewNetns(t, "cnipeer")
	netdevOf := map[string]string{}
	for _, nic := range n.topo.NICs {
		if nic.Netdev == "" {
			t.Fatalf("PF %s has no netdev in the tree", nic.PCI)
		}
		netdevOf[nic.PCI] = nic.Netdev
		netnstest.NewVeth(t, nic.Netdev, peer)
	}
	installNetwork(t, c, n, "rdma-late", lateRes, filepath.Join(n.dir, "state", "binding"), "10.57.0.0/24")

	const size = 4 // one-GPU pods: one per NIC
	var names []string
	for i := range size {
		name := fmt.Sprintf("cni-late-%d", i)
		cmd := `echo GPUS=$STANDIN_GPUS; echo VFS=$` + lateEnv + `; echo HCA=$NCCL_IB_HCA; sleep 3600`
		p := framework.BusyboxPod("default", name, "sh", "-c", cmd)
		framework.WithResourceLimit(p, gpuRes, 1)
		framework.WithResourceLimit(p, lateRes, 1)
		if _, err := c.CreatePod(ctx, p); err != nil {
			t.Fatal(err)
		}
		names = append(names, name)
		t.Cleanup(func() { _ = c.DeletePod(framework.Context(t, 2*time.Minute), "default", name) })
	}
	seen := map[string]int{}
	store := binding.NewStore(filepath.Join(n.dir, "state", "binding"), binding.Options{})
	for _, name := range names {
		if _, err := c.WaitForPodPhase(ctx, "default", name, corev1.PodRunning); err != nil {
			t.Fatal(err)
		}
		o := podOutput(ctx, t, c, name)
		if len(o.gpus) != 1 || len(o.vfs) != 1 {
			t.Fatalf("%s: GPUs %v, PFs %v (want one each)", name, o.gpus, o.vfs)
		}
		pf := o.vfs[0]
		// The PF the CNI moved (at sandbox creation) is the PF the
		// container was given (at container creation, through CDI); with
		// one GPU per NIC on this machine's rails, the four pods take the
		// four NICs, so the rail holds only where the pod's GPU shares a
		// NIC with no earlier pod's (logged, not asserted).
		if rail, ok := n.topo.Rail(o.gpus[0]); ok && rail.NIC != pf {
			t.Logf("%s: GPU %s got PF %s, its rail NIC is %s", name, o.gpus[0], pf, rail.NIC)
		}
		if err := exec.Command("ip", "link", "show", netdevOf[pf]).Run(); err == nil {
			t.Errorf("%s: %s (the netdev of its PF %s) is still on the host", name, netdevOf[pf], pf)
		}
		addr, err := c.Exec(ctx, "default", name, "main", "ip", "-o", "-4", "addr", "show", "dev", "eth1")
		if err != nil || !strings.Contains(addr, "10.57.0.") {
			t.Errorf("%s: eth1 in the pod: %q (%v), want an address from 10.57.0.0/24", name, addr, err)
		}
		if !strings.Contains(o.hca, n.rdma[pf]) {
			t.Errorf("%s: NCCL_IB_HCA %q lacks %s", name, o.hca, n.rdma[pf])
		}
		seen[pf]++
	}
	if len(seen) != size {
		t.Errorf("PFs handed out %v: want %d different", seen, size)
	}
	if bs, err := store.Bindings(); err != nil || len(bs) != size {
		t.Fatalf("%d bindings (%v), want %d", len(bs), err, size)
	}
	// The agent may have bound a pod early (right after kubelet allocated
	// its devices, while the sandbox was being made); railyard-cni then
	// found the binding and took it for its sandbox. Either way every
	// binding names the sandbox whose DEL releases it.
	by := map[string]int{}
	for _, b := range mustBindings(t, store) {
		by[b.By]++
		if b.Sandbox == "" {
			t.Errorf("binding %s of %s (made by %q) names no sandbox: railyard-cni's ADD did not take it", b.Token, b.Pod, b.By)
		}
	}
	t.Logf("bindings made by: %v", by)

	// Deleting the pods runs DEL: every netdev back under its name, every
	// binding released.
	began := time.Now()
	if err := c.DeletePods(ctx, "default", names...); err != nil {
		t.Fatal(err)
	}
	// DeletePods returns once the pod object is gone; the sandbox (and its
	// CNI DEL) may end a moment later.
	for pci, dev := range netdevOf {
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
			out, err := exec.Command("ip", "-o", "link", "show", dev).CombinedOutput()
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s (PF %s) not back on the host 30s after DEL: %v %s", dev, pci, err, out)
			}
		}
	}
	waitReleased(t, store, c.CDISpecDir, time.Minute)
	t.Logf("%d pods attached through containerd's CNI call; netdevs back and bindings released %v after deletion", size, time.Since(began).Round(100*time.Millisecond))
}

// installNetwork puts railyard-cni into containerd's CNI bin directory and
// a second network into its conf dir (containerd notices new files), both
// removed when the test ends: railyard-cni alone, naming resource (a
// sandbox or DRA pool) with bindingDir (where the agent publishes its
// views), without RDMA moves (no RDMA subsystem here), addresses from
// host-local's subnet.
func installNetwork(t *testing.T, c *framework.Cluster, n *node, name, resource, bindingDir, subnet string) {
	t.Helper()
	bin, err := c.ProjectBin("railyard-cni")
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(c.CNIBinDir(), "railyard-cni")
	if _, err := os.Stat(dst); err != nil {
		t.Cleanup(func() { _ = os.Remove(dst) }) // the CNI bin dir is shared by runs
	}
	// containerd runs it: written by a child process, so no fork of this
	// test binary holds it open for writing (ETXTBSY).
	exectest.WriteExecutable(t, dst+".tmp", data)
	if err := os.Rename(dst+".tmp", dst); err != nil {
		t.Fatal(err)
	}
	remove, err := c.AddCNINetwork(map[string]any{
		"cniVersion": "1.0.0",
		"name":       name,
		"plugins": []any{map[string]any{
			"type":         "railyard-cni",
			"resourceName": resource,
			"bindingDir":   bindingDir,
			"sysfsRoot":    n.sysfs,
			"stateDir":     filepath.Join(n.dir, "cni-state"),
			"rdma":         false,
			"ipam": map[string]any{"type": "host-local", "dataDir": filepath.Join(n.dir, "ipam"),
				"ranges": [][]map[string]string{{{"subnet": subnet}}}},
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(remove)
}

func podOutput(ctx context.Context, t *testing.T, c *framework.Cluster, name string) podOut {
	t.Helper()
	for i := 0; ; i++ {
		logs, err := c.PodLogs(ctx, "default", name, "main")
		if err == nil && strings.Contains(logs, "HCA=") {
			return parseOut(logs)
		}
		if i > 50 {
			t.Fatalf("%s: no output: %v", name, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func mustBindings(t *testing.T, s *binding.Store) []binding.Binding {
	t.Helper()
	bs, err := s.Bindings()
	if err != nil {
		t.Fatal(err)
	}
	return bs
}
