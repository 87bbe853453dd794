//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	"github.com/railyard-io/railyard/internal/helmchart"
	"github.com/railyard-io/railyard/internal/image"
	"github.com/railyard-io/railyard/test/e2e/framework"
)

const (
	installNS    = "railyard-system"
	installPF    = "railyard.io/install_pf"
	installVF    = "railyard.io/install_vf"
	installImage = "ghcr.io/railyard-io/railyard:0.1.0" // the chart's appVersion
	installLabel = "railyard.io/rdma"
)

// TestInstallChartRunsAgentAsDaemonSetPod installs Railyard as a user would:
// the image built by internal/image (`make images`) is imported into the
// node's containerd with `ctr images import`, the chart is rendered with
// Helm's SDK and its objects created through the apiserver, and the agent
// runs as a pod of the DaemonSet from that image.
//
// There is no kube-controller-manager in this cluster, so nothing turns the
// DaemonSet into pods: the test creates the pod the DaemonSet controller
// would (its template, an owner reference, the controller's node affinity
// and tolerations) and the real scheduler places it, honouring the chart's
// node selector. What is fake: the sysfs tree and the RDMA char devices
// (agentEnv), mounted into the pod through the chart's hostPath volumes
// because the configuration names them.
func TestInstallChartRunsAgentAsDaemonSetPod(t *testing.T) {
	c := requireCluster(t)
	ctx := testContext(t, 10*time.Minute)
	repo, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil { // the pod's hostPath volumes are below it
		t.Fatal(err)
	}
	env := newAgentEnv(t, dir)

	// 1. The image, as `make images` builds it, imported with ctr.
	start := time.Now()
	archive := filepath.Join(dir, "railyard.tar")
	res, err := image.Build(ctx, image.Options{
		Dir: repo, Packages: image.DefaultPackages(), Arch: "amd64", Version: "0.1.0", Revision: "e2e",
		Source: "https://github.com/railyard-io/railyard", Created: time.Unix(0, 0), Name: installImage, Out: archive,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("image %s %s built in %v (%d bytes)", res.Name, res.Digest, time.Since(start).Round(time.Millisecond), res.Archive)
	out, err := exec.CommandContext(ctx, "ctr", "--address", c.ContainerdSocket, "--namespace", "k8s.io", "images", "import", archive).CombinedOutput()
	if err != nil {
		t.Fatalf("ctr images import: %v\n%s", err, out)
	}
	out, err = exec.CommandContext(ctx, "ctr", "--address", c.ContainerdSocket, "--namespace", "k8s.io", "images", "ls", "name=="+installImage).CombinedOutput()
	if err != nil || !strings.Contains(string(out), res.Digest.String()) {
		t.Fatalf("ctr images ls: %v\n%s", err, out)
	}

	// 2. The chart, rendered with the fake node's paths and our pools.
	cniDst := filepath.Join(c.CNIBinDir(), "railyard-cni")
	if _, err := os.Stat(cniDst); err == nil {
		t.Logf("%s exists before the install; it will be replaced", cniDst)
	} else {
		t.Cleanup(func() { _ = os.Remove(cniDst) }) // the CNI bin dir is shared by runs
	}
	values := map[string]any{
		"createNamespace": true,
		"image":           map[string]any{"pullPolicy": "Never"},
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
	ch, err := helmchart.Load(filepath.Join(repo, "deploy/helm/railyard"))
	if err != nil {
		t.Fatal(err)
	}
	manifests, err := helmchart.Render(ch, helmchart.Options{Release: "railyard", Namespace: installNS, Values: values})
	if err != nil {
		t.Fatal(err)
	}

	// The chart's node selector: label the node as an operator would.
	setNodeLabel(ctx, t, c, installLabel, "true")
	t.Cleanup(func() { setNodeLabel(context.Background(), t, c, installLabel, "") })

	installStart := time.Now()
	ds := createObjects(ctx, t, c, manifests)
	pod := daemonSetPod(ds, c.NodeName)
	created, err := c.Client.CoreV1().Pods(installNS).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { deletePodNow(t, c, installNS, created.Name) })
	running, err := c.WaitForPodPhase(ctx, installNS, created.Name, corev1.PodRunning)
	if err != nil {
		logs, _ := c.PodLogs(context.Background(), installNS, created.Name, "agent")
		t.Fatalf("agent pod: %v\nagent log:\n%s", err, logs)
	}
	if running.Spec.NodeName != c.NodeName {
		t.Fatalf("scheduled on %q", running.Spec.NodeName)
	}

	// 3. The installer put railyard-cni into the CNI bin dir.
	initLog, err := c.PodLogs(ctx, installNS, created.Name, "install-cni")
	if err != nil {
		t.Fatal(err)
	}
	bin, err := os.ReadFile(cniDst)
	if err != nil {
		t.Fatalf("railyard-cni not installed: %v (init log %q)", err, initLog)
	}
	sum := sha256.Sum256(bin)
	if want := "installed " + filepath.Join("/host", cniDst) + " sha256:" + hex.EncodeToString(sum[:]); !strings.Contains(initLog, want) &&
		!strings.Contains(initLog, strings.Replace(want, "installed", "unchanged", 1)) {
		t.Fatalf("init log %q, want %q", initLog, want)
	}
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

	// 4. The agent registered through the hostPath kubelet socket.
	if err := c.WaitForNodeAllocatable(ctx, installPF, int64(len(pfPoolNames))); err != nil {
		logs, _ := c.PodLogs(context.Background(), installNS, created.Name, "agent")
		t.Fatalf("%v\nagent log:\n%s", err, logs)
	}
	if err := c.WaitForNodeAllocatable(ctx, installVF, int64(len(env.VFs))); err != nil {
		t.Fatal(err)
	}
	t.Logf("install to allocatable (objects created, pod scheduled, init container, agent registered): %v", time.Since(installStart).Round(time.Millisecond))

	// The agent process: uid 0, no capabilities, no new privileges, seccomp filter.
	status := agentProcStatus(t, "--config=/etc/railyard-agent/config.yaml")
	for _, want := range []string{"Uid:\t0\t0\t0\t0", "CapEff:\t0000000000000000", "CapPrm:\t0000000000000000", "CapBnd:\t0000000000000000", "NoNewPrivs:\t1", "Seccomp:\t2"} {
		if !strings.Contains(status, want) {
			t.Errorf("agent process status lacks %q:\n%s", want, status)
		}
	}

	// 5. The agent, running as a pod, serves a pod.
	user := framework.WithResourceLimit(framework.BusyboxPod("default", "install-user", "sh", "-c", "echo $PCIDEVICE_RAILYARD_IO_INSTALL_PF; ls /dev/infiniband; sleep 3600"), installPF, 1)
	if _, err := c.CreatePod(ctx, user); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { deletePodNow(t, c, "default", "install-user") })
	if _, err := c.WaitForPodPhase(ctx, "default", "install-user", corev1.PodRunning); err != nil {
		t.Fatal(err)
	}
	var logs string
	deadline := time.Now().Add(30 * time.Second)
	for ; time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if logs, _ = c.PodLogs(ctx, "default", "install-user", "main"); strings.Count(logs, "\n") >= 2 {
			break
		}
	}
	lines := strings.Fields(logs)
	if len(lines) < 3 {
		t.Fatalf("user pod printed %q", logs)
	}
	pf := lines[0]
	if !slices.Contains(mapValues(env.PFs), pf) {
		t.Fatalf("PCIDEVICE_RAILYARD_IO_INSTALL_PF = %q, not a PF of the pool %v", pf, env.PFs)
	}
	if got, want := lines[1:], env.expectedNodes(t, pf); !slices.Equal(got, want) {
		t.Fatalf("/dev/infiniband in the pod: %v, want %v", got, want)
	}

	// 6. The liveness probe (/healthz on the metrics port) keeps passing.
	time.Sleep(2 * time.Second)
	p, err := c.Client.CoreV1().Pods(installNS).Get(ctx, created.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, cs := range p.Status.ContainerStatuses {
		if !cs.Ready || cs.RestartCount != 0 {
			t.Fatalf("container %s ready=%v restarts=%d", cs.Name, cs.Ready, cs.RestartCount)
		}
	}
}

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// createObjects creates the rendered objects (Namespace, ServiceAccount,
// ConfigMap, DaemonSet) and returns the DaemonSet as stored. Objects other
// than the Namespace are deleted at cleanup (a Namespace would stay
// Terminating without a controller manager).
func createObjects(ctx context.Context, t *testing.T, c *framework.Cluster, ms []helmchart.Manifest) *appsv1.DaemonSet {
	t.Helper()
	var ds *appsv1.DaemonSet
	for _, m := range ms {
		var head struct{ Kind string }
		if err := yaml.Unmarshal([]byte(m.Content), &head); err != nil {
			t.Fatal(err)
		}
		var err error
		switch head.Kind {
		case "Namespace":
			var o corev1.Namespace
			mustDecode(t, m, &o)
			_, err = c.Client.CoreV1().Namespaces().Create(ctx, &o, metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) {
				err = nil
			}
		case "ServiceAccount":
			var o corev1.ServiceAccount
			mustDecode(t, m, &o)
			_, err = c.Client.CoreV1().ServiceAccounts(o.Namespace).Create(ctx, &o, metav1.CreateOptions{})
			t.Cleanup(func() {
				_ = c.Client.CoreV1().ServiceAccounts(o.Namespace).Delete(context.Background(), o.Name, metav1.DeleteOptions{})
			})
		case "ConfigMap":
			var o corev1.ConfigMap
			mustDecode(t, m, &o)
			_, err = c.Client.CoreV1().ConfigMaps(o.Namespace).Create(ctx, &o, metav1.CreateOptions{})
			t.Cleanup(func() {
				_ = c.Client.CoreV1().ConfigMaps(o.Namespace).Delete(context.Background(), o.Name, metav1.DeleteOptions{})
			})
		case "DaemonSet":
			var o appsv1.DaemonSet
			mustDecode(t, m, &o)
			ds, err = c.Client.AppsV1().DaemonSets(o.Namespace).Create(ctx, &o, metav1.CreateOptions{})
			t.Cleanup(func() {
				_ = c.Client.AppsV1().DaemonSets(o.Namespace).Delete(context.Background(), o.Name, metav1.DeleteOptions{})
			})
		default:
			t.Fatalf("%s: unexpected kind %s", m.Source, head.Kind)
		}
		if err != nil {
			t.Fatalf("create %s: %v", m.Source, err)
		}
	}
	if ds == nil {
		t.Fatal("the chart rendered no DaemonSet")
	}
	return ds
}

func mustDecode(t *testing.T, m helmchart.Manifest, into any) {
	t.Helper()
	if err := yaml.UnmarshalStrict([]byte(m.Content), into); err != nil {
		t.Fatalf("%s: %v", m.Source, err)
	}
}

// daemonSetPod is the pod the DaemonSet controller would create for node:
// the template, an owner reference to the DaemonSet, a required node
// affinity on the node's name (the scheduler binds it) and the tolerations
// the controller adds (pkg/controller/daemon/util.AddOrUpdateDaemonPodTolerations).
func daemonSetPod(ds *appsv1.DaemonSet, node string) *corev1.Pod {
	tpl := ds.Spec.Template.DeepCopy()
	yes := true
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName: ds.Name + "-",
			Namespace:    ds.Namespace,
			Labels:       tpl.Labels,
			Annotations:  tpl.Annotations,
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "apps/v1", Kind: "DaemonSet", Name: ds.Name, UID: types.UID(ds.UID),
				Controller: &yes, BlockOwnerDeletion: &yes,
			}},
		},
		Spec: tpl.Spec,
	}
	pod.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
			MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{node}}},
		}}},
	}}
	for _, key := range []string{"node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"} {
		pod.Spec.Tolerations = append(pod.Spec.Tolerations, corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute})
	}
	for _, key := range []string{"node.kubernetes.io/disk-pressure", "node.kubernetes.io/memory-pressure", "node.kubernetes.io/pid-pressure", "node.kubernetes.io/unschedulable"} {
		pod.Spec.Tolerations = append(pod.Spec.Tolerations, corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule})
	}
	return pod
}

func setNodeLabel(ctx context.Context, t *testing.T, c *framework.Cluster, key, value string) {
	t.Helper()
	patch := fmt.Sprintf(`{"metadata":{"labels":{%q:%q}}}`, key, value)
	if value == "" {
		patch = fmt.Sprintf(`{"metadata":{"labels":{%q:null}}}`, key)
	}
	if _, err := c.Client.CoreV1().Nodes().Patch(ctx, c.NodeName, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Errorf("label node: %v", err)
	}
}

func deletePodNow(t *testing.T, c *framework.Cluster, ns, name string) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := c.DeletePod(ctx, ns, name); err != nil && !apierrors.IsNotFound(errors.Unwrap(err)) {
		t.Logf("delete pod %s/%s: %v", ns, name, err)
	}
}

// agentProcStatus returns /proc/<pid>/status of the one process whose
// command line contains arg.
func agentProcStatus(t *testing.T, arg string) string {
	t.Helper()
	procs, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	for _, p := range procs {
		cmdline, err := os.ReadFile(filepath.Join("/proc", p.Name(), "cmdline"))
		if err != nil || !bytes.Contains(cmdline, []byte(arg)) || !bytes.HasSuffix(bytes.SplitN(cmdline, []byte{0}, 2)[0], []byte("railyard-agent")) {
			continue
		}
		status, err := os.ReadFile(filepath.Join("/proc", p.Name(), "status"))
		if err == nil {
			found = append(found, string(status))
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d railyard-agent processes with %s", len(found), arg)
	}
	return found[0]
}
