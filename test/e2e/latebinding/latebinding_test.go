//go:build e2e

package latebinding

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"

	"github.com/railyard-io/railyard/internal/binding"
	"github.com/railyard-io/railyard/internal/discovery"
	"github.com/railyard-io/railyard/internal/podresources/podlist"
	"github.com/railyard-io/railyard/internal/topology"
	"github.com/railyard-io/railyard/machines"
	"github.com/railyard-io/railyard/test/e2e/framework"
)

const (
	lateRes = "railyard.io/e2e_late"
	lateEnv = "PCIDEVICE_RAILYARD_IO_E2E_LATE"
	machine = "roce-8gpu-4nic"
)

// node is the fake node: a generated tree, real char device nodes (no
// driver behind them), the topology the test reads rails from.
type node struct {
	sysfs, dev, dir, config string
	topo                    *topology.Topology
	uverbs, rdma, pf        map[string]string // by PCI address
}

// newNode makes the fake node; the sandbox pool hands out devices of kind
// ("vf" or "pf").
func newNode(t *testing.T, c *framework.Cluster, kind string) *node {
	t.Helper()
	dir := t.TempDir()
	n := &node{sysfs: filepath.Join(dir, "sysfs"), dev: filepath.Join(dir, "dev"), dir: dir, config: filepath.Join(dir, "agent.yaml"),
		uverbs: map[string]string{}, rdma: map[string]string{}, pf: map[string]string{}}
	if err := machines.WriteSysfs(machine, n.sysfs, 2); err != nil {
		t.Fatal(err)
	}
	topo, err := discovery.Discover(context.Background(), n.sysfs)
	if err != nil {
		t.Fatal(err)
	}
	n.topo = topo
	ib := filepath.Join(n.dev, "infiniband")
	if err := os.MkdirAll(ib, 0o755); err != nil {
		t.Fatal(err)
	}
	minor := 192
	for _, nic := range topo.NICs {
		for _, vf := range nic.VFs {
			n.uverbs[vf.PCI], n.rdma[vf.PCI], n.pf[vf.PCI] = vf.Uverbs, vf.RDMA, nic.PCI
		}
		n.uverbs[nic.PCI], n.rdma[nic.PCI], n.pf[nic.PCI] = nic.Uverbs, nic.RDMA, nic.PCI
	}
	for _, u := range n.uverbs {
		if u == "" {
			continue
		}
		if err := unix.Mknod(filepath.Join(ib, u), unix.S_IFCHR|0o666, int(unix.Mkdev(231, uint32(minor)))); err != nil {
			t.Fatal(err)
		}
		minor++
	}
	if err := unix.Mknod(filepath.Join(ib, "rdma_cm"), unix.S_IFCHR|0o666, int(unix.Mkdev(231, 255))); err != nil {
		t.Fatal(err)
	}
	cfg := fmt.Sprintf(`apiVersion: railyard.io/v1alpha1
kind: AgentConfig
nodeName: railyard-e2e
resyncInterval: 2s
stateDir: %s
cdiSpecDir: %s
pools:
- name: %s
  deviceKind: %s
  policy: gpu-aware
  binding: sandbox
  selectors: {rdmaCapable: true}
`, filepath.Join(dir, "state"), c.CDISpecDir, lateRes, kind)
	if err := os.WriteFile(n.config, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return n
}

func (n *node) startAgent(t *testing.T, c *framework.Cluster) {
	t.Helper()
	bin, err := c.ProjectBin("railyard-agent")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.StartHelper("railyard-agent", bin, "--config", n.config, "--sysfs", n.sysfs, "--dev-root", n.dev,
		"--plugin-dir", framework.DevicePluginDir, "--pod-resources-socket", c.PodResourcesSocket(),
		"--devinfo-dir", filepath.Join(n.dir, "devinfo"), "--metrics-addr", "0", "--log-level", "debug"); err != nil {
		t.Fatal(err)
	}
}

// startNode makes the fake node with a sandbox pool of kind, starts the
// stand-in GPU plugin and the agent (both stopped when the test ends) and
// waits until the node shows every GPU and token.
func startNode(ctx context.Context, t *testing.T, c *framework.Cluster, kind string) (*node, *standinGPUPlugin) {
	t.Helper()
	n := newNode(t, c, kind)
	pods := podlist.New(c.PodResourcesSocket())
	t.Cleanup(pods.Close)
	gpu := &standinGPUPlugin{gpus: n.topo.GPUs, tokenRes: lateRes, pods: pods, orders: map[string]int{}}
	if err := gpu.start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(gpu.stop)
	n.startAgent(t, c)
	t.Cleanup(func() { _ = c.StopHelper("railyard-agent", 10*time.Second) })
	tokens := 0
	for _, nic := range n.topo.NICs {
		tokens += map[string]int{"pf": 1, "vf": len(nic.VFs)}[kind]
	}
	for res, want := range map[corev1.ResourceName]int{gpuRes: len(n.topo.GPUs), lateRes: tokens} {
		if err := c.WaitForNodeAllocatable(ctx, res, int64(want)); err != nil {
			t.Fatal(err)
		}
	}
	return n, gpu
}

// podOut is what a pod's container printed.
type podOut struct {
	nodes []string
	gpus  []string
	vfs   []string
	hca   string
}

func parseOut(s string) podOut {
	var o podOut
	for _, l := range strings.Split(s, "\n") {
		switch {
		case strings.HasPrefix(l, "NODES="):
			o.nodes = strings.Fields(strings.TrimPrefix(l, "NODES="))
		case strings.HasPrefix(l, "GPUS="):
			o.gpus = splitList(strings.TrimPrefix(l, "GPUS="))
		case strings.HasPrefix(l, "VFS="):
			o.vfs = splitList(strings.TrimPrefix(l, "VFS="))
		case strings.HasPrefix(l, "HCA="):
			o.hca = strings.TrimPrefix(l, "HCA=")
		}
	}
	return o
}

func splitList(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

// TestLateBindingWithRealKubelet: 56 pods of 1, 2 or 4 GPUs in waves that
// fill the node's 8 GPUs, each pod asking one token per GPU from a sandbox
// pool (roce-8gpu-4nic, 2 VFs per NIC, no secondary network: bound at
// PreStartContainer); every pod's container sees exactly its bound VFs'
// uverbs and rdma_cm, PCIDEVICE_* and NCCL_IB_HCA through CDI, and every
// GPU has a VF on its rail NIC, whichever order kubelet allocated in (both
// are logged). The agent restarts during wave 3 and kubelet during wave 5;
// running pods keep their bindings. Faked: the sysfs tree, the device nodes
// (real char devices, no driver), the GPU plugin (a stand-in, named so).
func TestLateBindingWithRealKubelet(t *testing.T) {
	c := suite.Cluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
	defer cancel()
	n, gpu := startNode(ctx, t, c, "vf")
	rng := rand.New(rand.NewPCG(11, 5))
	store := binding.NewStore(filepath.Join(n.dir, "state", "binding"), binding.Options{})
	total := 0
	for wave := 0; total < 56; wave++ {
		var names []string
		left := 8
		for left > 0 {
			size := []int{1, 2, 4}[rng.IntN(3)]
			if size > left {
				size = left
			}
			left -= size
			name := fmt.Sprintf("late-%d-%d", wave, len(names))
			cmd := `echo NODES=$(ls /dev/infiniband | tr '\n' ' '); echo GPUS=$STANDIN_GPUS; echo VFS=$` + lateEnv + `; echo HCA=$NCCL_IB_HCA; sleep 3600`
			p := framework.BusyboxPod("default", name, "sh", "-c", cmd)
			framework.WithResourceLimit(p, gpuRes, int64(size))
			framework.WithResourceLimit(p, lateRes, int64(size))
			if _, err := c.CreatePod(ctx, p); err != nil {
				t.Fatal(err)
			}
			names = append(names, name)
		}
		for _, name := range names {
			if _, err := c.WaitForPodPhase(ctx, "default", name, corev1.PodRunning); err != nil {
				t.Fatalf("wave %d: %v", wave, err)
			}
		}
		for _, name := range names {
			checkPod(t, ctx, c, n, name)
			total++
		}
		switch wave {
		case 2: // the agent restarts while the wave runs
			before, _ := store.Bindings()
			if err := c.StopHelper("railyard-agent", 10*time.Second); err != nil {
				t.Fatal(err)
			}
			n.startAgent(t, c)
			time.Sleep(2 * time.Second)
			after, _ := store.Bindings()
			if len(before) != 8 || !slices.EqualFunc(before, after, func(a, b binding.Binding) bool { return a.Token == b.Token && a.Device == b.Device }) {
				t.Fatalf("agent restart changed the bindings: %d before, %d after", len(before), len(after))
			}
		case 4: // kubelet restarts while the wave runs
			if err := c.RestartKubelet(ctx); err != nil {
				t.Fatal(err)
			}
			if err := gpu.start(ctx); err != nil { // kubelet wiped the plugin directory
				t.Fatal(err)
			}
			for res, want := range map[corev1.ResourceName]int64{gpuRes: 8, lateRes: 8} {
				if err := c.WaitForNodeAllocatable(ctx, res, want); err != nil {
					t.Fatal(err)
				}
			}
			for _, name := range names {
				if _, err := c.WaitForPodPhase(ctx, "default", name, corev1.PodRunning); err != nil {
					t.Fatalf("after kubelet restart: %v", err)
				}
			}
			if bs, _ := store.Bindings(); len(bs) != 8 {
				t.Fatalf("after kubelet restart: %d bindings, want 8", len(bs))
			}
		}
		if err := c.DeletePods(ctx, "default", names...); err != nil {
			t.Fatal(err)
		}
		// These pods have no network (no CNI DEL): the agent's GC releases
		// their bindings once PodResources stopped listing them for a
		// resync or two. The next wave then finds every rail free.
		began := time.Now()
		waitReleased(t, store, c.CDISpecDir, time.Minute)
		t.Logf("wave %d: %d pods checked, bindings released %v after the pods were deleted", wave, len(names), time.Since(began).Round(100*time.Millisecond))
	}
	orders := gpu.orderCounts()
	t.Logf("%d pods; kubelet's order per container: %v", total, orders)
	if orders["tokens-first"] == 0 || orders["gpus-first"] == 0 {
		t.Errorf("kubelet used one order only (%v): the test did not see both", orders)
	}
	reportBindTimes(t, c)
}

// waitReleased waits until the store holds no binding and the CDI
// directory no per-token spec.
func waitReleased(t *testing.T, store *binding.Store, cdiDir string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		bs, err := store.Bindings()
		specs, _ := filepath.Glob(filepath.Join(cdiDir, "railyard.io-binding-*.json"))
		if err == nil && len(bs) == 0 && len(specs) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("bindings left after every pod ended: %d (%v), specs %d", len(bs), err, len(specs))
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// checkPod reads a pod's output and checks its devices against its GPUs.
func checkPod(t *testing.T, ctx context.Context, c *framework.Cluster, n *node, name string) {
	t.Helper()
	o := podOutput(ctx, t, c, name)
	if len(o.gpus) == 0 || len(o.vfs) != len(o.gpus) {
		t.Fatalf("%s: GPUs %v, VFs %v (want one VF per GPU)", name, o.gpus, o.vfs)
	}
	want := []string{"rdma_cm"}
	for _, vf := range o.vfs {
		want = append(want, n.uverbs[vf])
		if !strings.Contains(o.hca, n.rdma[vf]) {
			t.Errorf("%s: NCCL_IB_HCA %q lacks %s (%s)", name, o.hca, n.rdma[vf], vf)
		}
	}
	sort.Strings(want)
	got := slices.Clone(o.nodes)
	sort.Strings(got)
	if !slices.Equal(got, want) {
		t.Errorf("%s: /dev/infiniband has %v, want %v", name, got, want)
	}
	for _, g := range o.gpus {
		rail, ok := n.topo.Rail(g)
		if !ok {
			t.Fatalf("%s: GPU %s has no rail", name, g)
		}
		if !slices.ContainsFunc(o.vfs, func(vf string) bool { return n.pf[vf] == rail.NIC }) {
			t.Errorf("%s: GPU %s's rail NIC is %s; the pod got %v (PFs %v)", name, g, rail.NIC, o.vfs, pfsOf(n, o.vfs))
		}
	}
}

func pfsOf(n *node, vfs []string) []string {
	var out []string
	for _, v := range vfs {
		out = append(out, n.pf[v])
	}
	return out
}

var (
	boundRE    = regexp.MustCompile(`msg="token bound".* pod=(\S+) .*at=(\S+) took=(\S+) list=(\S+) lockWait=(\S+) locked=(\S+)`)
	preStartRE = regexp.MustCompile(`msg="tokens bound before container start".* took=(\S+)`)
)

// reportBindTimes logs, from the agent's log, what binding adds to a pod's
// start: every PreStartContainer call's time (kubelet waits for it before
// creating the container; the agent has usually bound the pod early, while
// kubelet made the sandbox, and PreStartContainer only checks), and each
// pod's bind (early or at PreStartContainer) with where its time went:
// PodResources List, the wait for the store's lock, the work under it.
func reportBindTimes(t *testing.T, c *framework.Cluster) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(c.LogDir(), "railyard-agent.log"))
	if err != nil {
		t.Fatal(err)
	}
	pct := func(ds []time.Duration, q float64) time.Duration {
		slices.Sort(ds)
		return ds[min(len(ds)-1, int(q*float64(len(ds))))]
	}
	var preStart []time.Duration
	for _, m := range preStartRE.FindAllStringSubmatch(string(b), -1) {
		if d, err := time.ParseDuration(m[1]); err == nil {
			preStart = append(preStart, d)
		}
	}
	if len(preStart) == 0 {
		t.Fatal("no PreStartContainer times in the agent log")
	}
	t.Logf("PreStartContainer (the time binding adds to a pod's start) over %d calls: p50 %v, p99 %v, max %v",
		len(preStart), pct(preStart, 0.5), pct(preStart, 0.99), pct(preStart, 1))
	type bind struct {
		at string
		d  [4]time.Duration
	}
	perPod := map[string]bind{}
	for _, m := range boundRE.FindAllStringSubmatch(string(b), -1) {
		bd := bind{at: m[2]}
		ok := true
		for i := range bd.d {
			v, err := time.ParseDuration(m[3+i])
			bd.d[i], ok = v, ok && err == nil
		}
		if ok {
			perPod[m[1]] = bd
		}
	}
	if len(perPod) == 0 {
		t.Fatal("no bind times in the agent log")
	}
	ats := map[string]int{}
	var parts [4][]time.Duration
	for _, bd := range perPod {
		ats[bd.at]++
		for i := range bd.d {
			parts[i] = append(parts[i], bd.d[i])
		}
	}
	t.Logf("pods bound: %v (early: while kubelet made the sandbox; prestart: at PreStartContainer)", ats)
	for i, name := range []string{"the bind, wherever made", "  PodResources List", "  wait for the store's lock", "  under the lock"} {
		t.Logf("%s over %d pods: p50 %v, p99 %v, max %v", name, len(parts[i]), pct(parts[i], 0.5), pct(parts[i], 0.99), pct(parts[i], 1))
	}
	// The goal is 20 ms p99 of PreStartContainer (BENCHMARKS.md has what
	// this 2-core machine gives): past a second it is a hang or a bug. The
	// bind itself mostly runs early (while kubelet makes the sandbox, off
	// the pod's start) and fsyncs its files: at a load average of 19-22 on
	// 2 cores one early bind took 1.69 s under the lock (p50 29 ms), so
	// only past 10 s is it a hang.
	if p99 := pct(preStart, 0.99); p99 > time.Second || pct(parts[0], 0.99) > 10*time.Second {
		t.Errorf("PreStartContainer p99 %v, bind p99 %v: a bind hung", p99, pct(parts[0], 0.99))
	}
}
