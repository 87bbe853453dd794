//go:build e2e

package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/railyard-io/railyard/internal/helmchart"
	"github.com/railyard-io/railyard/internal/netops/netnstest"
	"github.com/railyard-io/railyard/test/e2e/framework"
)

const (
	installNS    = "railyard-system"
	installPF    = "railyard.io/install_pf"
	installVF    = "railyard.io/install_vf"
	installRepo  = "ghcr.io/railyard-io/railyard"
	installLabel = "railyard.io/rdma"
	installEnvPF = "PCIDEVICE_RAILYARD_IO_INSTALL_PF"
)

// TestInstallChartRunsAgentAsDaemonSetPod installs Railyard as a user would,
// upgrades it to a new image and uninstalls it:
//
//   - install: the image built by internal/image (`make images`) is
//     imported into the node's containerd with `ctr images import`, the
//     chart is rendered with Helm's SDK and its objects are created; the
//     agent runs as a pod of the DaemonSet from that image, the installer
//     puts railyard-cni into containerd's CNI bin dir, and a pod gets a
//     device;
//   - upgrade: a second image (another version) and the chart rendered with
//     its tag; the DaemonSet's pod is replaced; the running pod keeps its
//     device and kubelet its accounting;
//   - uninstall: the agent goes, running pods keep their devices.
//
// There is no kube-controller-manager in this cluster, so nothing turns the
// DaemonSet into pods, rolls it or garbage-collects its pods: the test does
// what the DaemonSet controller would (the template, an owner reference, the
// controller's node affinity and tolerations; on update, delete the old pod
// then create the new one, as maxUnavailable 1 does on one node) and the
// real scheduler places each pod, honouring the chart's node selector. What
// is fake: the sysfs tree and the RDMA char devices (agentEnv), mounted
// into the pod through the chart's hostPath volumes because the
// configuration names them.
func TestInstallChartRunsAgentAsDaemonSetPod(t *testing.T) {
	c := suite.Cluster(t)
	ctx := framework.Context(t, 15*time.Minute)
	repo, err := framework.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil { // the pod's hostPath volumes are below it
		t.Fatal(err)
	}
	env := newAgentEnv(t, dir)
	ch, err := helmchart.Load(filepath.Join(repo, "deploy/helm/railyard"))
	if err != nil {
		t.Fatal(err)
	}
	render := func(tag string) []helmchart.Manifest {
		t.Helper()
		ms, err := helmchart.Render(ch, helmchart.Options{Release: "railyard", Namespace: installNS, Values: installValues(c, env, dir, tag)})
		if err != nil {
			t.Fatal(err)
		}
		return ms
	}
	cniDst := filepath.Join(c.CNIBinDir(), "railyard-cni")
	if _, err := os.Stat(cniDst); err == nil {
		t.Logf("%s exists before the install; it will be replaced", cniDst)
	} else {
		t.Cleanup(func() { _ = os.Remove(cniDst) }) // the CNI bin dir is shared by runs
	}
	setNodeLabel(ctx, t, c, installLabel, "true") // the chart's node selector, as an operator would
	t.Cleanup(func() { setNodeLabel(context.Background(), t, c, installLabel, "") })

	// Objects outlive the subtest that made them: cleaned up by outer.
	outer := t
	var agentPod, userPF string
	ok := t.Run("install", func(t *testing.T) {
		buildAndImport(ctx, t, c, repo, dir, "0.1.0")
		start := time.Now()
		ds := createObjects(ctx, t, c, render("0.1.0"), outer.Cleanup)
		agentPod = runDaemonSetPod(ctx, t, c, ds, outer)
		t.Logf("install to allocatable (objects created, pod scheduled, init container, agent registered): %v", time.Since(start).Round(time.Millisecond))
		checkInstalledCNI(ctx, t, c, agentPod, cniDst)

		// The agent process: uid 0, no capabilities, no new privileges, seccomp filter.
		status := agentProcStatus(t, "--config=/etc/railyard-agent/config.yaml")
		for _, want := range []string{"Uid:\t0\t0\t0\t0", "CapEff:\t0000000000000000", "CapPrm:\t0000000000000000", "CapBnd:\t0000000000000000", "NoNewPrivs:\t1", "Seccomp:\t2"} {
			if !strings.Contains(status, want) {
				t.Errorf("agent process status lacks %q:\n%s", want, status)
			}
		}
		if err := c.WaitForNodeAllocatable(ctx, installVF, int64(len(env.VFs))); err != nil {
			t.Fatal(err)
		}

		// The agent, running as a pod, serves a pod.
		user := framework.WithResourceLimit(framework.BusyboxPod("default", "install-user", "sh", "-c", "echo $"+installEnvPF+"; ls /dev/infiniband; sleep 3600"), installPF, 1)
		if _, err := c.CreatePod(ctx, user); err != nil {
			t.Fatal(err)
		}
		outer.Cleanup(func() { deletePodNow(outer, c, "default", "install-user") })
		devs := podOutput(ctx, t, c, "install-user")
		userPF = devs[0]
		if !slices.Contains(mapValues(env.PFs), userPF) {
			t.Fatalf("%s = %q, not a PF of the pool %v", installEnvPF, userPF, env.PFs)
		}
		if got, want := devs[1:], env.expectedNodes(t, userPF); !slices.Equal(got, want) {
			t.Fatalf("/dev/infiniband in the pod: %v, want %v", got, want)
		}
		// The liveness probe (/healthz on the metrics port) keeps passing.
		time.Sleep(2 * time.Second)
		requireReadyNoRestart(ctx, t, c, installNS, agentPod)
	})
	if !ok {
		return
	}

	// The CNI the installer put in place, driven by containerd's own CNI
	// call (no Multus): a second network naming the PF pool by
	// resourceName attaches the PF kubelet allocated to the pod.
	ok = t.Run("attach", func(t *testing.T) {
		attachThroughContainerdCNI(ctx, t, c, env, dir)
	})
	if !ok {
		return
	}

	ok = t.Run("upgrade", func(t *testing.T) {
		userBefore := containerID(ctx, t, c, "default", "install-user")
		old, err := c.Client.CoreV1().Pods(installNS).Get(ctx, agentPod, metav1.GetOptions{})
		if err != nil || len(old.Status.ContainerStatuses) != 1 {
			t.Fatalf("agent pod: %v", err)
		}
		imageIDBefore := old.Status.ContainerStatuses[0].ImageID
		res := buildAndImport(ctx, t, c, repo, dir, "0.1.1")
		next := renderDaemonSet(t, render("0.1.1"))
		start := time.Now()
		ds, err := c.Client.AppsV1().DaemonSets(installNS).Get(ctx, next.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ds.Spec.Template = next.Spec.Template
		if ds, err = c.Client.AppsV1().DaemonSets(installNS).Update(ctx, ds, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		// The controller's rolling update on one node: old pod gone, then the new one.
		deletePodNow(t, c, installNS, agentPod)
		if err := c.WaitForNodeAllocatable(ctx, installPF, 0); err != nil {
			t.Fatalf("the old agent's devices stayed allocatable: %v", err)
		}
		agentPod = runDaemonSetPod(ctx, t, c, ds, outer)
		t.Logf("upgrade (DaemonSet updated, old pod deleted, new pod scheduled, agent registered): %v", time.Since(start).Round(time.Millisecond))
		p, err := c.Client.CoreV1().Pods(installNS).Get(ctx, agentPod, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, cs := range p.Status.ContainerStatuses {
			if cs.Image != installRepo+":0.1.1" || cs.ImageID == "" || cs.ImageID == imageIDBefore {
				t.Errorf("container %s runs %s (%s), want %s:0.1.1 (%s), not %s", cs.Name, cs.Image, cs.ImageID, installRepo, res.Digest, imageIDBefore)
			}
		}
		checkInstalledCNI(ctx, t, c, agentPod, cniDst)

		// The running pod kept its container and device, and kubelet its
		// accounting: the 7 other PFs go to a new pod, none is left.
		if got := containerID(ctx, t, c, "default", "install-user"); got != userBefore {
			t.Fatalf("the user pod's container changed: %s -> %s", userBefore, got)
		}
		fill := framework.WithResourceLimit(framework.BusyboxPod("default", "install-fill", "sh", "-c", "echo $"+installEnvPF+"; sleep 3600"), installPF, int64(len(pfPoolNames)-1))
		if _, err := c.CreatePod(ctx, fill); err != nil {
			t.Fatal(err)
		}
		outer.Cleanup(func() { deletePodNow(outer, c, "default", "install-fill") })
		got := strings.Split(podOutput(ctx, t, c, "install-fill")[0], ",")
		if len(got) != len(pfPoolNames)-1 || slices.Contains(got, userPF) {
			t.Fatalf("the fill pod got %v; the user pod holds %s", got, userPF)
		}
	})
	if !ok {
		return
	}

	t.Run("uninstall", func(t *testing.T) {
		userBefore := containerID(ctx, t, c, "default", "install-user")
		// What helm uninstall deletes; the DaemonSet's pod too (no garbage collector here).
		deleteObjects(ctx, t, c, render("0.1.1"))
		deletePodNow(t, c, installNS, agentPod)
		if err := c.WaitForNodeAllocatable(ctx, installPF, 0); err != nil {
			t.Fatal(err)
		}
		if got := containerID(ctx, t, c, "default", "install-user"); got != userBefore {
			t.Fatalf("the user pod's container changed: %s -> %s", userBefore, got)
		}
		out, err := c.Exec(ctx, "default", "install-user", "main", "ls", "/dev/infiniband")
		if err != nil {
			t.Fatal(err)
		}
		if got, want := strings.Fields(out), env.expectedNodes(t, userPF); !slices.Equal(got, want) {
			t.Fatalf("after uninstall /dev/infiniband in the pod: %v, want %v", got, want)
		}
		if _, err := os.Stat(cniDst); err != nil {
			t.Fatalf("uninstall removed railyard-cni (running pods' DEL needs it): %v", err)
		}
	})
}

// attachThroughContainerdCNI adds a CNI network whose only plugin is the
// installed railyard-cni with resourceName = the PF pool (allocate mode,
// no late binding), runs a pod asking one PF, and checks the PF's netdev
// (a veth named like it: there is no RDMA NIC here, so "rdma": false) is
// the pod's eth1 with a host-local address; deleting the pod returns it.
func attachThroughContainerdCNI(ctx context.Context, t *testing.T, c *framework.Cluster, env *agentEnv, dir string) {
	peer := netnstest.NewNetns(t, "instpeer")
	for name := range env.PFs {
		netnstest.NewVeth(t, name, peer)
	}
	remove, err := c.AddCNINetwork(map[string]any{
		"cniVersion": "1.0.0",
		"name":       "rdma-install",
		"plugins": []any{map[string]any{
			"type":               "railyard-cni",
			"resourceName":       installPF,
			"podResourcesSocket": c.PodResourcesSocket(),
			"bindingDir":         filepath.Join(dir, "no-binding"),
			"sysfsRoot":          env.SysfsDir,
			"stateDir":           filepath.Join(dir, "cni-state"),
			"rdma":               false,
			"ipam": map[string]any{"type": "host-local", "dataDir": filepath.Join(dir, "ipam"),
				"ranges": [][]map[string]string{{{"subnet": "10.58.0.0/24"}}}},
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer remove()
	const name = "install-attached"
	pod := framework.WithResourceLimit(framework.BusyboxPod("default", name, "sh", "-c", "echo $"+installEnvPF+"; sleep 3600"), installPF, 1)
	if _, err := c.CreatePod(ctx, pod); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { deletePodNow(t, c, "default", name) })
	pf := podOutput(ctx, t, c, name)[0]
	netdev := ""
	for n, addr := range env.PFs {
		if addr == pf {
			netdev = n
		}
	}
	if netdev == "" {
		t.Fatalf("%s = %q, not a PF of the pool", installEnvPF, pf)
	}
	if err := exec.Command("ip", "link", "show", netdev).Run(); err == nil {
		t.Errorf("%s (PF %s, allocated to the pod) is still on the host", netdev, pf)
	}
	addr, err := c.Exec(ctx, "default", name, "main", "ip", "-o", "-4", "addr", "show", "dev", "eth1")
	if err != nil || !strings.Contains(addr, "10.58.0.") {
		t.Errorf("eth1 in the pod: %q (%v), want an address from 10.58.0.0/24", addr, err)
	}
	t.Logf("containerd's CNI call attached the allocated PF %s (%s) as eth1: %s", pf, netdev, strings.Join(strings.Fields(addr)[1:4], " "))
	// A pod asking for no PF gets the network too (containerd runs it for
	// every pod): it starts, without eth1.
	plain := framework.BusyboxPod("default", "install-plain", "sleep", "3600")
	if _, err := c.CreatePod(ctx, plain); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { deletePodNow(t, c, "default", "install-plain") })
	if _, err := c.WaitForPodPhase(ctx, "default", "install-plain", corev1.PodRunning); err != nil {
		t.Fatalf("a pod without RDMA devices on a node with the network: %v", err)
	}
	if links, err := c.Exec(ctx, "default", "install-plain", "main", "ip", "-o", "link"); err != nil || strings.Contains(links, "eth1") {
		t.Errorf("the pod without RDMA devices has links %q (%v), want no eth1", links, err)
	}
	if err := c.DeletePod(ctx, "default", name); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		if exec.Command("ip", "link", "show", netdev).Run() == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not back on the host 30s after the pod was deleted", netdev)
		}
	}
}

func installValues(c *framework.Cluster, env *agentEnv, dir, tag string) map[string]any {
	return map[string]any{
		"createNamespace": true,
		"image":           map[string]any{"tag": tag, "pullPolicy": "Never"},
		"cni":             map[string]any{"binDir": c.CNIBinDir()},
		"agent":           map[string]any{"logLevel": "debug"},
		"config": map[string]any{
			"nodeName":           c.NodeName,
			"sysfsRoot":          env.SysfsDir,
			"devRoot":            env.DevRoot,
			"pluginDir":          framework.DevicePluginDir,
			"podResourcesSocket": c.PodResourcesSocket(),
			"devInfoDir":         filepath.Join(dir, "devinfo"),
			"pools": []any{
				map[string]any{"name": installPF, "deviceKind": "pf", "policy": "spread",
					"selectors": map[string]any{"pfNames": toAny(pfPoolNames)}},
				map[string]any{"name": installVF, "deviceKind": "vf", "policy": "spread",
					"selectors": map[string]any{"pfNames": toAny(suffixAll(vfPoolPFs, "#0-1"))}},
			},
		},
	}
}

// runDaemonSetPod creates the DaemonSet's pod, waits until it runs on our
// node and the agent registered all PFs, and returns its name; the pod is
// deleted when outer ends.
func runDaemonSetPod(ctx context.Context, t *testing.T, c *framework.Cluster, ds *appsv1.DaemonSet, outer *testing.T) string {
	t.Helper()
	created, err := c.Client.CoreV1().Pods(installNS).Create(ctx, daemonSetPod(ds, c.NodeName), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	outer.Cleanup(func() { deletePodNow(outer, c, installNS, created.Name) })
	running, err := c.WaitForPodPhase(ctx, installNS, created.Name, corev1.PodRunning)
	if err != nil {
		logs, _ := c.PodLogs(context.Background(), installNS, created.Name, "agent")
		t.Fatalf("agent pod: %v\nagent log:\n%s", err, logs)
	}
	if running.Spec.NodeName != c.NodeName {
		t.Fatalf("scheduled on %q", running.Spec.NodeName)
	}
	if err := c.WaitForNodeAllocatable(ctx, installPF, int64(len(pfPoolNames))); err != nil {
		logs, _ := c.PodLogs(context.Background(), installNS, created.Name, "agent")
		t.Fatalf("%v\nagent log:\n%s", err, logs)
	}
	return created.Name
}

// checkInstalledCNI: the init container put railyard-cni into the CNI bin
// dir (the file its log names, 0755, a working plugin, no temporary file).
func checkInstalledCNI(ctx context.Context, t *testing.T, c *framework.Cluster, pod, cniDst string) {
	t.Helper()
	initLog, err := c.PodLogs(ctx, installNS, pod, "install-cni")
	if err != nil {
		t.Fatal(err)
	}
	bin, err := os.ReadFile(cniDst)
	if err != nil {
		t.Fatalf("railyard-cni not installed: %v (init log %q)", err, initLog)
	}
	sum := sha256.Sum256(bin)
	tail := " " + filepath.Join("/host", cniDst) + " sha256:" + hex.EncodeToString(sum[:])
	if !strings.Contains(initLog, "installed"+tail) && !strings.Contains(initLog, "unchanged"+tail) {
		t.Fatalf("init log %q, want %q", initLog, tail)
	}
	t.Logf("install-cni: %s", strings.TrimSpace(initLog))
	if st, _ := os.Stat(cniDst); st.Mode().Perm() != 0o755 {
		t.Fatalf("%s mode %v", cniDst, st.Mode())
	}
	version := exec.CommandContext(ctx, cniDst)
	version.Env = []string{"CNI_COMMAND=VERSION"}
	version.Stdin = strings.NewReader(`{"cniVersion":"1.1.0"}`)
	if out, err := version.Output(); err != nil || !strings.Contains(string(out), `"supportedVersions"`) {
		t.Fatalf("installed railyard-cni VERSION: %v %s", err, out)
	}
	if leftovers, _ := filepath.Glob(filepath.Join(c.CNIBinDir(), ".railyard-cni.tmp-*")); len(leftovers) > 0 {
		t.Fatalf("temporary files left: %v", leftovers)
	}
}

// podOutput waits for a running pod's first log lines: its PF list, then
// its /dev/infiniband entries.
func podOutput(ctx context.Context, t *testing.T, c *framework.Cluster, name string) []string {
	t.Helper()
	if _, err := c.WaitForPodPhase(ctx, "default", name, corev1.PodRunning); err != nil {
		t.Fatal(err)
	}
	var logs string
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if logs, _ = c.PodLogs(ctx, "default", name, "main"); strings.TrimSpace(logs) != "" {
			break
		}
	}
	time.Sleep(300 * time.Millisecond) // the rest of the output
	logs, _ = c.PodLogs(ctx, "default", name, "main")
	f := strings.Fields(logs)
	if len(f) == 0 {
		t.Fatalf("pod %s printed nothing", name)
	}
	return f
}

func containerID(ctx context.Context, t *testing.T, c *framework.Cluster, ns, name string) string {
	t.Helper()
	p, err := c.Client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Status.Phase != corev1.PodRunning || len(p.Status.ContainerStatuses) != 1 || p.Status.ContainerStatuses[0].RestartCount != 0 {
		t.Fatalf("pod %s: %s %+v", name, p.Status.Phase, p.Status.ContainerStatuses)
	}
	return p.Status.ContainerStatuses[0].ContainerID
}

func requireReadyNoRestart(ctx context.Context, t *testing.T, c *framework.Cluster, ns, name string) {
	t.Helper()
	p, err := c.Client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, cs := range p.Status.ContainerStatuses {
		if !cs.Ready || cs.RestartCount != 0 {
			t.Fatalf("container %s ready=%v restarts=%d", cs.Name, cs.Ready, cs.RestartCount)
		}
	}
}
