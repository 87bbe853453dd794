//go:build e2e

package multinode

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/railyard-io/railyard/internal/discovery"
	"github.com/railyard-io/railyard/internal/fakesysfs"
	"github.com/railyard-io/railyard/internal/rdmastats"
	"github.com/railyard-io/railyard/test/e2e/framework"
)

// railNetwork is the CNI network of rail r on a node: railyard-cni naming
// the rail's pool by resourceName (containerd's CRI runs it for every pod,
// as a second network; a pod without the rail's device gets nothing from
// it), with addresses from the rail's subnet by whereabouts, whose IPPool
// in the apiserver is the one record for every node (the spine's .254
// excluded). A device plugin pool's device
// is found through kubelet's PodResources; a DRA pool's (dra) through the
// view the agent publishes in its binding directory (the default,
// /var/lib/railyard/binding, each node's own).
func railNetwork(c *framework.MultiCluster, n framework.NodeInfo, r framework.RailInfo, dra bool) map[string]any {
	plugin := map[string]any{
		"type":               "railyard-cni",
		"resourceName":       string(railPool(r.Index)),
		"podResourcesSocket": "/var/lib/kubelet/pod-resources/kubelet.sock",
		"bindingDir":         filepath.Join(n.Dir, "no-binding"),
		"sysfsRoot":          filepath.Join(c.Info.MachineDir, "sysfs"),
		// railyard-cni's default, each node's own (a private
		// /var/lib/cni): the agent reads it there (cni.podEvents).
		"stateDir": "/var/lib/cni/railyard",
		"rdma":     false,
		"ipam": map[string]any{
			"type": "whereabouts", "range": r.Subnet, "exclude": []string{r.Spine + "/32"},
			"configuration_path": c.Info.WhereaboutsConfig,
			"log_file":           filepath.Join(n.Dir, "whereabouts.log"), "log_level": "debug",
		},
	}
	if dra {
		delete(plugin, "bindingDir")
		delete(plugin, "podResourcesSocket")
	}
	return map[string]any{"cniVersion": "1.0.0", "name": "rail" + itoa(r.Index), "plugins": []any{plugin}}
}

// addRailNetworks writes rails' networks (of DRA pools: dra) into every GPU node's CNI conf
// dir (after the pod network: eth1, eth2, ...) and removes them at cleanup.
func addRailNetworks(t *testing.T, c *framework.MultiCluster, dra bool, rails ...int) {
	t.Helper()
	for _, n := range c.Info.GPUNodes() {
		for i, r := range rails {
			data, err := json.Marshal(railNetwork(c, n, c.Info.Rails[r], dra))
			if err != nil {
				t.Fatal(err)
			}
			p := filepath.Join(n.CNIConfDir, fmt.Sprintf("%d-rail%d.conflist", 20+i, r))
			if err := os.WriteFile(p, data, 0o644); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = os.Remove(p) })
		}
	}
	// containerd reloads its CNI configuration on the directory's events.
	time.Sleep(2 * time.Second)
	t.Cleanup(func() { time.Sleep(2 * time.Second) })
}

type railPod struct {
	name, node string
	rail       int
	railIP     string // its address on the rail
	podIP      string // its address on the pod network
}

// listen starts, in the background, an nc listener writing what it
// receives to out. Its stdin never ends: busybox's nc quits when its stdin
// does, dropping the connection.
func listen(port int, out string) string {
	return fmt.Sprintf("(sleep 3600 | nc -l -p %d > %s 2>/dev/null) </dev/null >/dev/null 2>&1 &", port, out)
}

// startRailPod runs a pod on node holding rail r's PF (NET_ADMIN to route
// through the spine), listening on TCP 5001 (payload to /tmp/got).
func startRailPod(ctx context.Context, t *testing.T, c *framework.MultiCluster, name, node string, r int) *railPod {
	t.Helper()
	pod := framework.WithResourceLimit(framework.BusyboxPod("default", name, "sh", "-c", listen(5001, "/tmp/got")+" sleep 3600"), railPool(r), 1)
	pod.Spec.NodeSelector = map[string]string{"kubernetes.io/hostname": node}
	pod.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"NET_ADMIN"}}}
	// Railyard's TCP probe, from its image (in every node), for measurements.
	pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{
		Name: "probe", Image: railyardImage(t), ImagePullPolicy: corev1.PullNever,
		Command: []string{"/usr/local/bin/railyard", "bench", "probe", "tcp", "--listen", ":5299", "--wait", "1h"},
	})
	if _, err := c.CreatePod(ctx, pod); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.DeletePod(context.Background(), "default", name) })
	p, err := c.WaitForPodPhase(ctx, "default", name, corev1.PodRunning)
	if err != nil {
		t.Fatal(err)
	}
	if p.Spec.NodeName != node {
		t.Fatalf("pod %s on %s, want %s", name, p.Spec.NodeName, node)
	}
	return &railPod{name: name, node: node, rail: r, podIP: p.Status.PodIP, railIP: railAddress(ctx, t, c, name, r)}
}

func (p *railPod) exec(ctx context.Context, c *framework.MultiCluster, cmd string) (string, error) {
	return c.Exec(ctx, "default", p.name, "main", "sh", "-c", cmd)
}

// testRails: pods on two GPU nodes holding the PF of rail 0 reach each
// other through leaf 0 (ping and TCP, the leaf's ports count the packets);
// a pod on rail 0 cannot reach a pod on rail 1 while the rails are
// isolated, even routing through its leaf's spine address, and can once
// the spine joins them. The pod network works across nodes too.
func testRails(ctx context.Context, t *testing.T, c *framework.MultiCluster) {
	gpus := c.Info.GPUNodes()
	if len(gpus) < 2 || len(c.Info.Rails) < 2 {
		t.Skipf("needs two GPU nodes and two rails (have %d, %d)", len(gpus), len(c.Info.Rails))
	}
	addRailNetworks(t, c, false, 0, 1)
	a := startRailPod(ctx, t, c, "rail0-a", gpus[0].Name, 0)
	b := startRailPod(ctx, t, c, "rail0-b", gpus[1].Name, 0)
	s := startRailPod(ctx, t, c, "rail1-c", gpus[1].Name, 1)
	t.Logf("rail 0: %s on %s %s, %s on %s %s; rail 1: %s on %s %s", a.name, a.node, a.railIP, b.name, b.node, b.railIP, s.name, s.node, s.railIP)

	t.Run("same rail across nodes", func(t *testing.T) {
		inA, inB := fabricCounter(ctx, t, c, fabricPort(gpus[0], 0)), fabricCounter(ctx, t, c, fabricPort(gpus[1], 0))
		if out, err := a.exec(ctx, c, "ping -c 3 -W 2 "+b.railIP); err != nil {
			t.Fatalf("ping %s over rail 0: %v\n%s", b.railIP, err, out)
		}
		if out, err := a.exec(ctx, c, "echo over-rail-0 | nc -w 3 "+b.railIP+" 5001"); err != nil {
			t.Fatalf("nc to %s: %v %s", b.railIP, err, out)
		}
		var got string
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
			if got, _ = b.exec(ctx, c, "cat /tmp/got"); strings.TrimSpace(got) != "" {
				break
			}
		}
		if strings.TrimSpace(got) != "over-rail-0" {
			t.Errorf("%s received %q over TCP, want over-rail-0", b.name, got)
		}
		// Both nodes' rail-0 NICs sent into leaf 0.
		if n := fabricCounter(ctx, t, c, fabricPort(gpus[0], 0)); n < inA+3 {
			t.Errorf("leaf 0 port of %s received %d packets, want at least 3", gpus[0].Name, n-inA)
		}
		if n := fabricCounter(ctx, t, c, fabricPort(gpus[1], 0)); n < inB+3 {
			t.Errorf("leaf 0 port of %s received %d packets, want at least 3", gpus[1].Name, n-inB)
		}
	})
	t.Run("pod network across nodes", func(t *testing.T) {
		if out, err := a.exec(ctx, c, "ping -c 2 -W 2 "+b.podIP); err != nil {
			t.Fatalf("ping %s (%s's pod IP on %s): %v\n%s", b.podIP, b.name, b.node, err, out)
		}
	})
	t.Run("rail and pod network: latency and throughput", func(t *testing.T) { testPaths(ctx, t, c, a, b) })
	t.Run("isolated rails, then the spine", func(t *testing.T) {
		// Each pod routes the other's rail through its own leaf's spine address.
		for _, x := range []struct {
			p     *railPod
			other int
		}{{a, 1}, {s, 0}} {
			r := c.Info.Rails[x.p.rail]
			if out, err := x.p.exec(ctx, c, "ip route add "+c.Info.Rails[x.other].Subnet+" via "+r.Spine); err != nil {
				t.Fatalf("%s: route: %v %s", x.p.name, err, out)
			}
		}
		if out, err := a.exec(ctx, c, "ping -c 2 -W 1 "+s.railIP); err == nil {
			t.Fatalf("rail 0 reached rail 1 with the spine off:\n%s", out)
		}
		if err := framework.SetSpine(ctx, c.Info.Dir, true); err != nil {
			t.Fatal(err)
		}
		defer func() {
			if err := framework.SetSpine(context.Background(), c.Info.Dir, false); err != nil {
				t.Error(err)
			}
		}()
		if out, err := a.exec(ctx, c, "ping -c 2 -W 2 "+s.railIP); err != nil {
			t.Fatalf("rail 0 to rail 1 through the spine: %v\n%s", err, out)
		}
	})
	t.Run("RDMA counters name the pod holding the NIC", func(t *testing.T) { testCounters(ctx, t, c, s) })
}

// testCounters scrapes the agent of p's node through the apiserver's pod
// proxy, as Prometheus scrapes the pod: the RDMA counters of the PF p holds
// (its rail's) carry p's pod and namespace labels, from kubelet's
// PodResources, its job (the batch Job label the test gives p, through the
// agent's watch of its node's pods: the chart's metrics.jobNames), and the
// bytes the NIC's counter says; once p is deleted its series go. Faked: the counters are files of the node's generated
// tree (mlx5's, written and advanced by the test: no RDMA device here);
// the agent, its PodResources and what it exports are real.
func testCounters(ctx context.Context, t *testing.T, c *framework.MultiCluster, p *railPod) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	var tree string
	for _, n := range c.Info.GPUNodes() {
		if n.Name == p.node {
			tree = filepath.Join(n.Dir, "machine", "sysfs")
		}
	}
	topo, err := discovery.Discover(ctx, tree)
	if err != nil {
		t.Fatal(err)
	}
	rdma, rails := "", topo.NICRails()
	for _, nic := range topo.NICs {
		if r, ok := rails[nic.PCI]; ok && r == p.rail {
			rdma = nic.RDMA
			break
		}
	}
	if err := fakesysfs.WriteCounters(tree, rdma, fakesysfs.MLX5); err != nil {
		t.Fatal(err)
	}
	// 1,000 words: 4,000 bytes on railyard_rdma_port_transmit_bytes_total.
	if err := fakesysfs.AdvanceCounters(tree, rdma, 1, fakesysfs.MLX5, map[string]uint64{"counters/port_xmit_data": 1000}); err != nil {
		t.Fatal(err)
	}
	label := []byte(`{"metadata":{"labels":{"batch.kubernetes.io/job-name":"rails-e2e"}}}`)
	if _, err := c.Client.CoreV1().Pods("default").Patch(ctx, p.name, types.MergePatchType, label, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	series := func(ctx context.Context) (int, string) {
		text, err := agentMetrics(ctx, c, releaseNS, p.node)
		if err != nil {
			return -1, err.Error()
		}
		n, rails, sent := 0, map[string]bool{}, "no"
		for _, line := range strings.Split(text, "\n") {
			if !strings.HasPrefix(line, rdmastats.Prefix) {
				continue
			}
			l := map[string]string{}
			for _, m := range labelPair.FindAllStringSubmatch(line, -1) {
				l[m[1]] = m[2]
			}
			if l["pod"] == p.name && l["namespace"] == "default" {
				n++
				rails[l["rail"]+" "+l["nic"]+" job "+l["job_name"]] = true
				if strings.HasPrefix(line, rdmastats.Prefix+"port_transmit_bytes_total{") {
					sent = strings.TrimSpace(line[strings.LastIndex(line, "}")+1:])
				}
			}
		}
		return n, fmt.Sprintf("%d series labelled pod %s, on rails and NICs %v, %s bytes sent", n, p.name, slices.Sorted(maps.Keys(rails)), sent)
	}
	var last string
	poll(ctx, t, "the counters of "+p.name+"'s NIC on "+p.node+"'s agent", func(ctx context.Context) (bool, string) {
		n, msg := series(ctx)
		last = msg
		return n > 0 && msg == fmt.Sprintf("%d series labelled pod %s, on rails and NICs [%d %s job rails-e2e], 4000 bytes sent", n, p.name, p.rail, rdma), msg
	})
	t.Logf("%s's agent: %s", p.node, last)
	// railyard top --cluster reads every agent the same way and shows the
	// job's row, then its port.
	for _, args := range [][]string{nil, {"--job", "rails-e2e"}} {
		cmd := exec.CommandContext(ctx, railyardBin(t), append([]string{"top", "--cluster", "-n", "1", "--interval", "1s", "--kubeconfig", c.Kubeconfig}, args...)...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("railyard top --cluster %v: %v\n%s", args, err, out)
		}
		t.Logf("railyard top --cluster %v:\n%s", args, out)
		want := []string{"default/rails-e2e", p.node}
		if args != nil {
			want = []string{p.node, rdma, "default/" + p.name}
		}
		for _, w := range want {
			if !strings.Contains(string(out), w) {
				t.Errorf("railyard top --cluster %v does not show %q", args, w)
			}
		}
	}
	if err := c.DeletePod(ctx, "default", p.name); err != nil {
		t.Fatal(err)
	}
	poll(ctx, t, "no counters labelled "+p.name+" once it is gone", func(ctx context.Context) (bool, string) {
		n, msg := series(ctx)
		return n == 0, msg
	})
}

var labelPair = regexp.MustCompile(`(\w+)="([^"]*)"`)

// agentMetrics is the /metrics text of the agent on node of the chart
// released in ns, through the apiserver's pod proxy.
func agentMetrics(ctx context.Context, c *framework.MultiCluster, ns, node string) (string, error) {
	pods, err := c.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + node})
	if err != nil {
		return "", err
	}
	for _, pod := range pods.Items {
		if pod.Status.Phase != corev1.PodRunning {
			continue
		}
		b, err := c.Client.CoreV1().Pods(ns).ProxyGet("http", pod.Name, "9410", "/metrics", nil).DoRaw(ctx)
		if err != nil {
			return "", fmt.Errorf("scraping %s: %w", pod.Name, err)
		}
		return string(b), nil
	}
	return "", fmt.Errorf("no running agent pod on %s", node)
}
