//go:build e2e

package multinode

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/railyard-io/railyard/internal/benchverify"
	"github.com/railyard-io/railyard/internal/containerdev"
	"github.com/railyard-io/railyard/test/e2e/framework"
)

// testNCCLTwoRailPodWithGIDStandIn: a pod holding the PFs of rails 0 and
// 1 (device plugin, railyard-cni per rail through containerd's CNI
// configuration) gets
//
//   - NCCL's GID selection in its environment (NCCL_IB_ROCE_VERSION_NUM=2,
//     NCCL_IB_ADDR_FAMILY=AF_INET: NCCL picks each HCA's RoCE v2 GID
//     itself) and railyard-cni's record of each HCA's RoCE v2 GID index
//     for its address, the same on both (3), logged by railyard-cni;
//   - per-interface arp_ignore=1, arp_announce=2, rp_filter=2 and a source
//     rule and routing table per rail address, read in the pod's netns;
//   - an address on each rail that answers only through that rail: a
//     peer on rail 0 reaches the pod's rail-0 address, and not its rail-1
//     address sent through rail 0 (an on-link route), until arp_ignore on
//     the pod's rail-0 interface is put back to the kernel's default 0
//     (ARP flux: it then answers), and again not once it is 1.
//
// Then a pod on the other node whose rail-1 HCA has another address's
// GIDs before it (so its pod address lands at index 5, rail 0's at 3) is
// reported by railyard-cni's log with the fix.
//
// FAKED, with what the real component does: the NICs are veths in a
// generated sysfs tree, which is InfiniBand on this cluster's machine
// model and has no GID table the kernel fills. The rail networks here
// read a copy of each node's tree with its ports' link layer set to
// Ethernet (roceCopy), and gidStandIn writes the GID table as the
// kernel's RoCE GID management would: the default link-local RoCE v1 and
// v2 GIDs at 0 and 1 (drivers/infiniband/core/cache.c,
// gid_table_reserve_default and ib_cache_gid_set_default_gid), and for an
// IPv4 address added to the netdev its IPv4-mapped GID as RoCE v1 and RoCE
// v2 at the first free indexes (roce_gid_mgmt.c update_gid_ip ->
// ib_cache_gid_add per GID type, cache.c __ib_cache_gid_add's first empty
// entry). The stand-in learns the address from whereabouts' IPPool (the
// allocation is written before railyard-cni sets the address); it writes
// no gid_attrs/ndevs (the kernel shows the netdev's current name there,
// which it does not track; railyard-cni takes a GID without one). Pods,
// kubelet, the device plugin, containerd, railyard-cni, whereabouts, the
// netns settings, ARP and routing are real.
func testNCCLTwoRailPodWithGIDStandIn(ctx context.Context, t *testing.T, c *framework.MultiCluster) {
	gpus := c.Info.GPUNodes()
	if len(gpus) < 2 || len(c.Info.Rails) < 2 || len(gpus[0].Rails) < 2 || len(gpus[1].Rails) < 2 {
		t.Skip("needs two GPU nodes with two rails each")
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	start := time.Now()
	dir := t.TempDir()
	trees := map[string]string{}
	for _, n := range gpus[:2] {
		trees[n.Name] = roceCopy(t, filepath.Join(n.Dir, "machine", "sysfs"))
		if err := gidDefaults(trees[n.Name], n.Rails[:2]); err != nil {
			t.Fatal(err)
		}
	}
	logOf := func(n framework.NodeInfo) string { return filepath.Join(dir, n.Name+"-cni.log") }
	for _, n := range gpus[:2] {
		for i, r := range []int{0, 1} {
			net := railNetwork(c, n, c.Info.Rails[r], false)
			plugin := net["plugins"].([]any)[0].(map[string]any)
			plugin["sysfsRoot"], plugin["logFile"], plugin["logLevel"] = trees[n.Name], logOf(n), "info"
			data, err := json.Marshal(net)
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
	time.Sleep(2 * time.Second) // containerd reloads its CNI configuration on the directory's events
	t.Cleanup(func() { time.Sleep(2 * time.Second) })
	standIn := newGIDStandIn(t, c)
	go standIn.run(ctx)

	// The two-rail pod on the first node; its peer on rail 0 on the second.
	standIn.expect("nccl-two-rails", trees[gpus[0].Name], gpus[0].Rails[:2])
	pod := ncclPod(t, ctx, c, "nccl-two-rails", gpus[0].Name, "36123", 0, 1)
	peer := ncclPod(t, ctx, c, "nccl-peer", gpus[1].Name, "36124", 0)
	addrs := podRailAddrs(ctx, t, pod, 0, 1)
	peerAddr := podRailAddrs(ctx, t, peer, 0)

	t.Run("GID selection in the environment", func(t *testing.T) {
		env, err := c.Exec(ctx, "default", pod.name, "main", "env")
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"NCCL_IB_ROCE_VERSION_NUM=2", "NCCL_IB_ADDR_FAMILY=AF_INET", "NCCL_SOCKET_IFNAME=" + containerdev.DefaultSocketIfname} {
			if !strings.Contains(env, want+"\n") {
				t.Errorf("the pod's environment lacks %s:\n%s", want, env)
			}
		}
	})
	t.Run("one RoCE v2 GID index for both HCAs, recorded and logged", func(t *testing.T) {
		gids := cniGIDs(t, gpus[0], addrs)
		if len(gids) != 2 || gids[0].Index != 3 || gids[1].Index != 3 {
			t.Errorf("railyard-cni's records of the pod's HCAs: %+v; want two, both at index 3", gids)
		}
		if log := readFile(t, logOf(gpus[0])); !regexp.MustCompile(`RoCE v2 GID index of the pod's HCAs" index=3`).MatchString(log) {
			t.Errorf("railyard-cni's log does not give the index:\n%s", log)
		}
	})
	t.Run("per-rail ARP, reverse path and source routing in the pod's netns", func(t *testing.T) {
		rules := pod.nsenter(ctx, t, "ip", "-4", "rule", "show")
		for r, a := range addrs {
			for knob, want := range map[string]string{"arp_ignore": "1", "arp_announce": "2", "rp_filter": "2"} {
				if got := strings.TrimSpace(pod.nsenter(ctx, t, "cat", "/proc/sys/net/ipv4/conf/"+a.ifname+"/"+knob)); got != want {
					t.Errorf("rail %d (%s): %s %s, want %s", r, a.ifname, knob, got, want)
				}
			}
			table := strconv.Itoa(10000 + a.ifindex)
			if !strings.Contains(rules, "from "+a.ip+" lookup "+table) {
				t.Errorf("no rule from %s lookup %s:\n%s", a.ip, table, rules)
			}
			if routes := pod.nsenter(ctx, t, "ip", "-4", "route", "show", "table", table); !strings.Contains(routes, "dev "+a.ifname) {
				t.Errorf("table %s has no route through %s:\n%s", table, a.ifname, routes)
			}
		}
	})
	t.Run("each address answers only through its own rail", func(t *testing.T) {
		if out, err := peer.exec(ctx, c, "ping -c 2 -W 2 "+addrs[0].ip); err != nil {
			t.Fatalf("the rail-0 peer does not reach the pod's rail-0 address %s: %v\n%s", addrs[0].ip, err, out)
		}
		// The rail-1 address, asked for on rail 0 (on-link through the
		// peer's rail-0 interface: an ARP request on leaf 0).
		peer.nsenter(ctx, t, "ip", "route", "add", addrs[1].ip+"/32", "dev", peerAddr[0].ifname)
		ping := func() error { _, err := peer.exec(ctx, c, "ping -c 2 -W 1 "+addrs[1].ip); return err }
		if ping() == nil {
			t.Fatalf("the pod's rail-1 address %s answered on rail 0", addrs[1].ip)
		}
		// The same with the kernel's default on the pod's rail-0
		// interface: it answers (ARP flux), so the check above can fail.
		knob := "net.ipv4.conf." + addrs[0].ifname + ".arp_ignore"
		pod.nsenter(ctx, t, "sysctl", "-w", knob+"=0")
		flux := ping()
		pod.nsenter(ctx, t, "sysctl", "-w", knob+"=1")
		if flux != nil {
			t.Errorf("with arp_ignore=0 on %s the rail-1 address still did not answer on rail 0: the isolation above is not the setting's", addrs[0].ifname)
		}
		pod.nsenter(ctx, t, "ip", "neigh", "flush", "all")
		peer.nsenter(ctx, t, "ip", "neigh", "flush", "all")
		if ping() == nil {
			t.Errorf("with arp_ignore=1 again the rail-1 address answered on rail 0")
		}
	})
	_ = c.DeletePods(ctx, "default", pod.name, peer.name)

	t.Run("HCAs needing different GID indexes are reported with the fix", func(t *testing.T) {
		n := gpus[1]
		// Rail 1's netdev had another address before the pod: its GIDs
		// take 2 and 3, and the pod's land at 4 (v1) and 5 (v2).
		if err := addIPv4GIDs(trees[n.Name], n.Rails[1], net.ParseIP("192.0.2.77")); err != nil {
			t.Fatal(err)
		}
		poll(ctx, t, "the first pods gone", func(ctx context.Context) (bool, string) {
			l, err := c.Client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + n.Name})
			if err != nil {
				return false, err.Error()
			}
			for _, p := range l.Items {
				if p.Name == peer.name {
					return false, "nccl-peer still there"
				}
			}
			return true, ""
		})
		standIn.expect("nccl-gid-mismatch", trees[n.Name], n.Rails[:2])
		p := ncclPod(t, ctx, c, "nccl-gid-mismatch", n.Name, "36125", 0, 1)
		a := podRailAddrs(ctx, t, p, 0, 1)
		gids := cniGIDs(t, n, a)
		if len(gids) != 2 || gids[0].Index != 3 || gids[1].Index != 5 {
			t.Errorf("railyard-cni's records: %+v; want rail 0 at 3, rail 1 at 5", gids)
		}
		log := readFile(t, logOf(n))
		for _, want := range []string{"RoCE GID indexes differ across the pod's HCAs", "leave NCCL_IB_GID_INDEX unset", "=3,", "=5"} {
			if !strings.Contains(log, want) {
				t.Errorf("railyard-cni's log lacks %q:\n%s", want, log)
			}
		}
		// What a user runs on the node: the records, with the mismatch.
		out, err := exec.CommandContext(ctx, railyardBin(t), "topo", "--machine", n.Machine, "--cni-state", cniStateDir(n)).CombinedOutput()
		if err != nil || !strings.Contains(string(out), "index 3 ("+a[0].ip+" on ") || !strings.Contains(string(out), "index 5 ("+a[1].ip+" on ") ||
			!strings.Contains(string(out), "at different indexes") || !strings.Contains(string(out), "leave NCCL_IB_GID_INDEX unset") {
			t.Errorf("railyard topo --cni-state: %v\n%s", err, out)
		}
		if i := strings.Index(string(out), "railyard-cni attachments"); i >= 0 {
			t.Logf("railyard topo --cni-state on %s:\n%s", n.Name, out[i:])
		}
		// The agent, which reads these records, says so on the pod: one
		// Warning Event naming each HCA's index and the fix, and not
		// again at its next check (resyncInterval, 10 s: the unit tests
		// hold the once-only rule over many checks).
		var ev corev1.Event
		poll(ctx, t, "the RoCEGIDIndexMismatch Event on nccl-gid-mismatch", func(ctx context.Context) (bool, string) {
			evs, err := gidEvents(ctx, c, p.name)
			if err != nil || len(evs) == 0 {
				return false, fmt.Sprint(len(evs), err)
			}
			ev = evs[0]
			return true, ""
		})
		if ev.Type != corev1.EventTypeWarning || ev.InvolvedObject.UID == "" || ev.Source.Component != "railyard-agent" || ev.Source.Host != n.Name {
			t.Errorf("event type %q involvedObject %+v source %+v", ev.Type, ev.InvolvedObject, ev.Source)
		}
		for _, want := range []string{"index 3 (" + a[0].ip + " on ", "index 5 (" + a[1].ip + " on ", "leave NCCL_IB_GID_INDEX unset"} {
			if !strings.Contains(ev.Message, want) {
				t.Errorf("the Event's message lacks %q: %s", want, ev.Message)
			}
		}
		t.Logf("event on pod %s: %s %s: %s", p.name, ev.Type, ev.Reason, ev.Message)
		select {
		case <-ctx.Done():
		case <-time.After(11 * time.Second):
		}
		if evs, err := gidEvents(ctx, c, p.name); err != nil || len(evs) != 1 || evs[0].Count != 1 {
			t.Errorf("after the agent's next checks: %d events (%v), want the one", len(evs), err)
		}
		if log := agentLog(ctx, t, c, n.Name); strings.Count(log, "RoCE GID indexes differ across the pod's HCAs") != 1 ||
			!strings.Contains(log, "pod=default/"+p.name) || !strings.Contains(log, "leave NCCL_IB_GID_INDEX unset") {
			t.Errorf("the agent's log on %s does not say it once, with the pod and the fix:\n%s", n.Name, log)
		}
		if evs, err := gidEvents(ctx, c, "nccl-two-rails"); err != nil || len(evs) != 0 {
			t.Errorf("the two-rail pod whose HCAs agree has %d RoCEGIDIndexMismatch events (%v)", len(evs), err)
		}
	})
	if err := standIn.err(); err != nil {
		t.Error(err)
	}
	t.Logf("two-rail pod, its peer and the GID mismatch pod: %v", time.Since(start).Round(time.Millisecond))
}

// ncclPod runs a busybox pod on node holding the PFs of rails, its main
// process "sleep <marker>" so that the test finds its netns from the host
// (where it changes routes and sysctls with the host's tools).
// ncclTestPod is a pod of the test, found on the host by its marker.
type ncclTestPod struct{ name, node, marker string }

func (p *ncclTestPod) exec(ctx context.Context, c *framework.MultiCluster, cmd string) (string, error) {
	return c.Exec(ctx, "default", p.name, "main", "sh", "-c", cmd)
}

func ncclPod(t *testing.T, ctx context.Context, c *framework.MultiCluster, name, node, marker string, rails ...int) *ncclTestPod {
	t.Helper()
	pod := framework.BusyboxPod("default", name, "sleep", marker)
	for _, r := range rails {
		pod = framework.WithResourceLimit(pod, railPool(r), 1)
	}
	pod.Spec.NodeSelector = map[string]string{"kubernetes.io/hostname": node}
	if _, err := c.CreatePod(ctx, pod); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.DeletePod(context.Background(), "default", name) })
	p, err := c.WaitForPodPhase(ctx, "default", name, corev1.PodRunning)
	if err != nil {
		t.Fatal(err)
	}
	return &ncclTestPod{name: name, node: p.Spec.NodeName, marker: marker}
}

// nsenter runs a host command in the pod's network namespace (found
// through its main process, "sleep <marker>").
func (p *ncclTestPod) nsenter(ctx context.Context, t *testing.T, args ...string) string {
	t.Helper()
	pid := ""
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		cmd, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && bytes.Equal(cmd, []byte("sleep\x00"+p.marker+"\x00")) {
			pid = e.Name()
			break
		}
	}
	if pid == "" {
		t.Fatalf("pod %s: no process sleep %s", p.name, p.marker)
	}
	out, err := exec.CommandContext(ctx, "nsenter", append([]string{"--target", pid, "--net", "--"}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("pod %s: %v: %v\n%s", p.name, args, err, out)
	}
	return string(out)
}

// railAddr is a pod's address on a rail and its interface.
type railAddr struct {
	ip, ifname string
	ifindex    int
}

// podRailAddrs finds the pod's interface and address on each rail (by
// the rail's subnet).
func podRailAddrs(ctx context.Context, t *testing.T, p *ncclTestPod, rails ...int) []railAddr {
	t.Helper()
	out := p.nsenter(ctx, t, "ip", "-o", "-4", "addr", "show")
	var got []railAddr
	for _, r := range rails {
		_, subnet, _ := net.ParseCIDR(cluster.Info.Rails[r].Subnet)
		found := false
		for _, m := range regexp.MustCompile(`(?m)^(\d+): (\S+)\s+inet (\S+)/`).FindAllStringSubmatch(out, -1) {
			if ip := net.ParseIP(m[3]); ip != nil && subnet.Contains(ip) {
				idx, _ := strconv.Atoi(m[1])
				got, found = append(got, railAddr{ip: m[3], ifname: m[2], ifindex: idx}), true
				break
			}
		}
		if !found {
			t.Fatalf("pod %s has no address on rail %d (%s):\n%s", p.name, r, subnet, out)
		}
	}
	return got
}

// cniStateDir is where node n's railyard-cni state directory (the
// default, /var/lib/cni/railyard, in the node's private /var/lib/cni) is
// on the host.
func cniStateDir(n framework.NodeInfo) string {
	return filepath.Join(n.Dir, "cni-lib", "railyard")
}

// gidEvents are the agent's RoCEGIDIndexMismatch Events on pod
// default/name.
func gidEvents(ctx context.Context, c *framework.MultiCluster, name string) ([]corev1.Event, error) {
	l, err := c.Client.CoreV1().Events("default").List(ctx, metav1.ListOptions{
		FieldSelector: "involvedObject.kind=Pod,involvedObject.name=" + name + ",reason=RoCEGIDIndexMismatch"})
	if err != nil {
		return nil, err
	}
	return l.Items, nil
}

// agentLog is the log of the agent pod on node.
func agentLog(ctx context.Context, t *testing.T, c *framework.MultiCluster, node string) string {
	t.Helper()
	pods, err := c.Client.CoreV1().Pods(releaseNS).List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + node})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if p.Labels["app.kubernetes.io/component"] != "agent" {
			continue
		}
		b, err := c.Client.CoreV1().Pods(releaseNS).GetLogs(p.Name, &corev1.PodLogOptions{Container: "agent"}).DoRaw(ctx)
		if err != nil {
			t.Fatalf("agent log of %s: %v", p.Name, err)
		}
		return string(b)
	}
	t.Fatalf("no agent pod on %s", node)
	return ""
}

// cniGIDs are the GIDs railyard-cni recorded (its state records) for the
// pod's addresses on node n, in the order of addrs.
func cniGIDs(t *testing.T, n framework.NodeInfo, addrs []railAddr) []containerdev.HCAGID {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(cniStateDir(n), "devices", "*.json"))
	var out []containerdev.HCAGID
	for _, a := range addrs {
		for _, f := range files {
			var rec struct {
				GID *containerdev.HCAGID `json:"gid"`
			}
			if data, err := os.ReadFile(f); err == nil && json.Unmarshal(data, &rec) == nil && rec.GID != nil && rec.GID.Addr == a.ip {
				out = append(out, *rec.GID)
			}
		}
	}
	return out
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// The GID table stand-in (see testNCCLTwoRailPodWithGIDStandIn).

// portGIDDir is the port directory of a netdev's RDMA device in tree.
func portGIDDir(tree, netdev string) (string, error) {
	devs, err := os.ReadDir(filepath.Join(tree, "class", "net", netdev, "device", "infiniband"))
	if err != nil {
		return "", fmt.Errorf("netdev %s: RDMA device: %w", netdev, err)
	}
	if len(devs) != 1 {
		return "", fmt.Errorf("netdev %s: %d RDMA devices, want 1", netdev, len(devs))
	}
	return filepath.Join(tree, "class", "net", netdev, "device", "infiniband", devs[0].Name(), "ports", "1"), nil
}

// gidDefaults lays out the default RoCE GIDs of each netdev's port as
// the kernel does when the port comes up as RoCE: the link-local GID (the
// tree's gids/0) as RoCE v1 at 0 and RoCE v2 at 1, nothing else.
func gidDefaults(tree string, netdevs []string) error {
	for _, nd := range netdevs {
		pd, err := portGIDDir(tree, nd)
		if err != nil {
			return err
		}
		ll, err := os.ReadFile(filepath.Join(pd, "gids", "0"))
		if err != nil {
			return err
		}
		for _, d := range []string{"gids", "gid_attrs/types", "gid_attrs/ndevs"} {
			if err := os.RemoveAll(filepath.Join(pd, d)); err != nil {
				return err
			}
			if err := os.MkdirAll(filepath.Join(pd, d), 0o755); err != nil {
				return err
			}
		}
		for i, typ := range []string{"IB/RoCE v1", "RoCE v2"} {
			if err := writeGID(pd, i, strings.TrimSpace(string(ll)), typ); err != nil {
				return err
			}
		}
	}
	return nil
}

// addIPv4GIDs adds an IPv4 address's GIDs to a netdev's port as the
// kernel does: RoCE v1, then RoCE v2, each at the first free index.
func addIPv4GIDs(tree, netdev string, ip net.IP) error {
	pd, err := portGIDDir(tree, netdev)
	if err != nil {
		return err
	}
	v4 := ip.To4()
	if v4 == nil {
		return fmt.Errorf("%s: not IPv4", ip)
	}
	gid := fmt.Sprintf("0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x", v4[0], v4[1], v4[2], v4[3])
	for _, typ := range []string{"IB/RoCE v1", "RoCE v2"} {
		i := 0
		for ; ; i++ {
			if _, err := os.Stat(filepath.Join(pd, "gids", strconv.Itoa(i))); os.IsNotExist(err) {
				break
			}
		}
		if err := writeGID(pd, i, gid, typ); err != nil {
			return err
		}
	}
	return nil
}

func writeGID(pd string, i int, gid, typ string) error {
	if err := os.WriteFile(filepath.Join(pd, "gid_attrs", "types", strconv.Itoa(i)), []byte(typ+"\n"), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(pd, "gids", strconv.Itoa(i)), []byte(gid+"\n"), 0o644)
}

// gidStandIn adds a pod's rail addresses to its HCAs' GID tables as
// soon as whereabouts has allocated them (railyard-cni waits two
// seconds for the GID after setting the address).
type gidStandIn struct {
	t       *testing.T
	client  dynamic.Interface
	mu      sync.Mutex
	pods    map[string]standInPod // by pod name
	done    map[string]bool       // pod/ip written
	lastErr error
}

type standInPod struct {
	tree    string
	netdevs []string // by rail
}

func newGIDStandIn(t *testing.T, c *framework.MultiCluster) *gidStandIn {
	cfg, err := clientcmd.BuildConfigFromFlags("", c.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	d, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &gidStandIn{t: t, client: d, pods: map[string]standInPod{}, done: map[string]bool{}}
}

func (s *gidStandIn) expect(pod, tree string, netdevs []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pods[pod] = standInPod{tree: tree, netdevs: netdevs}
}

func (s *gidStandIn) err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastErr
}

var ipPools = schema.GroupVersionResource{Group: "whereabouts.cni.cncf.io", Version: "v1alpha1", Resource: "ippools"}

// run polls whereabouts' IPPools every 50 ms until ctx ends.
func (s *gidStandIn) run(ctx context.Context) {
	for ctx.Err() == nil {
		list, err := s.client.Resource(ipPools).Namespace("").List(ctx, metav1.ListOptions{})
		if err == nil {
			for _, p := range list.Items {
				rng, _, _ := unstructuredString(p.Object, "spec", "range")
				_, subnet, perr := net.ParseCIDR(rng)
				allocs, _ := p.Object["spec"].(map[string]any)["allocations"].(map[string]any)
				if perr != nil {
					continue
				}
				for offset, a := range allocs {
					ref, _ := a.(map[string]any)["podref"].(string)
					s.allocated(subnet, offset, ref)
				}
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// allocated writes the GIDs of an allocation of a pod it expects.
func (s *gidStandIn) allocated(subnet *net.IPNet, offset, podref string) {
	name := strings.TrimPrefix(podref, "default/")
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.pods[name]
	if !ok {
		return
	}
	n, err := strconv.ParseInt(offset, 10, 64)
	if err != nil {
		return
	}
	base := subnet.IP.To4()
	if base == nil || n < 0 || n > 1<<16 {
		return
	}
	v := uint32(base[0])<<24 | uint32(base[1])<<16 | uint32(base[2])<<8 | uint32(base[3]) + uint32(n)
	ip := net.IPv4(byte(v>>24), byte(v>>16), byte(v>>8), byte(v))
	rail := -1
	for r, ri := range cluster.Info.Rails {
		if ri.Subnet == subnet.String() {
			rail = r
		}
	}
	if rail < 0 || rail >= len(p.netdevs) || s.done[name+"/"+ip.String()] {
		return
	}
	s.done[name+"/"+ip.String()] = true
	if err := addIPv4GIDs(p.tree, p.netdevs[rail], ip); err != nil {
		s.lastErr = fmt.Errorf("GID stand-in: %s rail %d %s: %w", name, rail, ip, err)
	}
}

func unstructuredString(obj map[string]any, path ...string) (string, bool, error) {
	var cur any = obj
	for _, k := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return "", false, nil
		}
		cur = m[k]
	}
	s, ok := cur.(string)
	return s, ok, nil
}

// verifyDRAJob runs `railyard bench verify` on the DRA job's two running
// pods (labelled here): from the real API server it reads each pod's
// claim, its NIC's rail and RDMA device and its GPU from the slices, and
// the claim's networkData; both pods are on rail r (job-rails passes),
// each holds its device (job-devices passes), each NIC's distance to its
// pod's GPU is known; the pods print no NCCL line (busybox), so job-logs
// warns and the exit status is 1.
func verifyDRAJob(ctx context.Context, t *testing.T, c *framework.MultiCluster, bin string, r int64, pods ...string) {
	t.Helper()
	for _, name := range pods {
		patch := []byte(`{"metadata":{"labels":{"railyard-e2e-job":"dra"}}}`)
		if _, err := c.Client.CoreV1().Pods("default").Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// The agent writes each claim's networkData right after railyard-cni
	// attached its NIC (retrying): a verify before it sees no address.
	var rep benchverify.Report
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(time.Second) {
		cmd := exec.CommandContext(ctx, bin, "bench", "verify", "--kubeconfig", c.Kubeconfig, "-n", "default", "-l", "railyard-e2e-job=dra", "--log-bytes", "64Ki", "--json")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 1 {
			t.Fatalf("railyard bench verify: %v, want exit status 1 (no NCCL line)\n%s\n%s", err, out, stderr.String())
		}
		rep = benchverify.Report{}
		if err := json.Unmarshal(out, &rep); err != nil {
			t.Fatalf("bench verify --json: %v\n%s", err, out)
		}
		addressed := len(rep.Pods) > 0
		for _, p := range rep.Pods {
			addressed = addressed && len(p.NICs) > 0 && len(p.NICs[0].IPs) > 0
		}
		if addressed || time.Now().After(deadline) {
			break
		}
	}
	status := map[string]string{}
	for _, v := range rep.Verdicts {
		status[v.Check] = string(v.Status)
	}
	want := map[string]string{benchverify.CheckLogs: "warn", benchverify.CheckDevices: "pass", benchverify.CheckRails: "pass"}
	for check, st := range want {
		if status[check] != st {
			t.Errorf("%s: %s, want %s (%+v)", check, status[check], st, rep.Verdicts)
		}
	}
	if status[benchverify.CheckNear] == "info" {
		t.Errorf("job-near knows no NIC's distance to its pod's GPU: %+v", rep.Verdicts)
	}
	if len(rep.Pods) != len(pods) {
		t.Fatalf("bench verify read %d pods, want %d: %+v", len(rep.Pods), len(pods), rep.Pods)
	}
	for _, p := range rep.Pods {
		if len(p.NICs) != 1 || p.NICs[0].Rail == nil || *p.NICs[0].Rail != r || p.NICs[0].RDMA == "" || p.NICs[0].Class == "" ||
			len(p.NICs[0].IPs) == 0 || len(p.GPUs) != 1 || p.GPUs[0].PCI == "" {
			t.Errorf("pod %s: NICs %+v, GPUs %+v; want one NIC on rail %d with its RDMA device, class and address, and one GPU", p.Name, p.NICs, p.GPUs, r)
		}
	}
	text, _ := exec.CommandContext(ctx, bin, "bench", "verify", "--kubeconfig", c.Kubeconfig, "-n", "default", "-l", "railyard-e2e-job=dra").Output()
	t.Logf("railyard bench verify:\n%s", text)
}
