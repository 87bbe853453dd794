//go:build e2e

package multinode

import (
	"context"
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
	"github.com/railyard-io/railyard/test/e2e/framework"
)

const releaseNS = "railyard-system"

// TestChartOnEveryGPUNode installs the chart with up.sh's values: Helm's
// SDK renders it (internal/helmchart, as `helm template -f
// DIR/railyard-values.yaml --set createNamespace=true`) and kubectl applies
// it (the module links no Helm action client), then the test checks
// that what Kubernetes itself did is right: the DaemonSet controller made
// one agent pod per GPU node and none on the control-plane node; every GPU
// node's allocatable shows its own rails' pools; the init container put
// railyard-cni into every GPU node's own CNI bin dir. Then pods on two
// nodes exchange traffic over a rail (rails_test.go); a pod in "default"
// gets the chart's RoCE network of railyard-system through Multus (the
// stand-in of test/multus, built from Multus's source: Multus is not on
// the module proxy), keeps it across the upgrade and releases it on
// delete (multus_test.go); and deleting what was applied (helm uninstall)
// makes the namespace controller and the garbage collector remove the
// agents. Nothing here stands in for a controller; what is fake is each node's machine (sysfs tree, RDMA
// device nodes, NICs as veths cabled to the fabric's leaf bridges).
func TestChartOnEveryGPUNode(t *testing.T) {
	c := mc(t)
	ctx := framework.Context(t, 10*time.Minute)
	ch, vals := clusterChart(t, c)
	// The counters' job_name: the agents watch their node's pods.
	m, _ := vals["metrics"].(map[string]any)
	if m == nil {
		m = map[string]any{}
	}
	m["jobNames"] = true
	vals["metrics"] = m
	// A pod's RoCE GID index mismatch as an Event on it (nccl_test.go).
	cv, _ := vals["cni"].(map[string]any)
	if cv == nil {
		cv = map[string]any{}
	}
	cv["podEvents"] = true
	vals["cni"] = cv
	withChartNetworks(ctx, t, c, vals)
	render := func(vals map[string]any) string {
		t.Helper()
		ms, err := helmchart.Render(ch, helmchart.Options{Release: "railyard", Namespace: releaseNS, Values: vals})
		if err != nil {
			t.Fatal(err)
		}
		return helmchart.Stream(ms)
	}
	stream := render(vals)
	gpus := c.Info.GPUNodes()
	outer := t // the release outlives the install subtest
	uninstalled := false

	ok := t.Run("install", func(t *testing.T) {
		start := time.Now()
		if out, err := kubectl(ctx, c, stream, "apply", "-f", "-"); err != nil {
			t.Fatalf("kubectl apply: %v\n%s", err, out)
		}
		outer.Cleanup(func() {
			if !uninstalled {
				uninstall(outer, c, stream)
			}
		})
		ds := waitDaemonSet(ctx, t, c, len(gpus))
		checkAgentPods(ctx, t, c, ds, gpus)
		for _, n := range gpus {
			for r := range n.Rails {
				poll(ctx, t, n.Name+" allocatable "+string(railPool(r)), func(ctx context.Context) (bool, string) {
					v, err := allocatable(ctx, c, n.Name, railPool(r))
					if err != nil {
						return false, err.Error()
					}
					return v == 1, strings.Repeat("|", int(v))
				})
			}
			for r := len(n.Rails); r < len(c.Info.Rails); r++ {
				if v, _ := allocatable(ctx, c, n.Name, railPool(r)); v != 0 {
					t.Errorf("%s (%s, %d rails) has %d of %s", n.Name, n.Machine, len(n.Rails), v, railPool(r))
				}
			}
		}
		t.Logf("helm install to allocatable on all %d GPU nodes: %v", len(gpus), time.Since(start).Round(time.Millisecond))
		for _, n := range c.Info.Nodes {
			if n.Role == framework.RoleControlPlane {
				if v, _ := allocatable(ctx, c, n.Name, railPool(0)); v != 0 {
					t.Errorf("control-plane node %s has %d of %s", n.Name, v, railPool(0))
				}
			}
		}
	})
	if !ok {
		return
	}
	t.Run("cni on every GPU node", func(t *testing.T) {
		for _, n := range c.Info.Nodes {
			bin := filepath.Join(n.CNIBinDir, "railyard-cni")
			_, err := os.Stat(bin)
			if n.Role == framework.RoleControlPlane {
				if err == nil {
					t.Errorf("railyard-cni installed on the control-plane node %s", n.Name)
				}
				continue
			}
			if err != nil {
				t.Errorf("node %s: %v", n.Name, err)
				continue
			}
			version := exec.CommandContext(ctx, bin)
			version.Env = []string{"CNI_COMMAND=VERSION"}
			version.Stdin = strings.NewReader(`{"cniVersion":"1.1.0"}`)
			if out, err := version.Output(); err != nil || !strings.Contains(string(out), `"supportedVersions"`) {
				t.Errorf("node %s: railyard-cni VERSION: %v %s", n.Name, err, out)
			}
		}
	})
	t.Run("rails", func(t *testing.T) { testRails(ctx, t, c) })
	t.Run("nccl two-rail pod with the GID stand-in", func(t *testing.T) { testNCCLTwoRailPodWithGIDStandIn(ctx, t, c) })
	// The chart's own network through Multus, across the upgrade.
	var multusBefore *corev1.Pod
	multusOK := t.Run("network in another namespace through Multus", func(t *testing.T) {
		installMultus(outer, c)
		outer.Cleanup(func() { _ = c.DeletePod(context.Background(), "default", multusPod) }) // it lives on across the upgrade
		multusBefore = startMultusPod(ctx, t, c, gpus[0])
	})
	t.Run("upgrade rolls node by node", func(t *testing.T) {
		vals["agent"] = map[string]any{"logLevel": "debug"} // a changed value: a new pod template
		testRollout(ctx, t, c, render(vals))
	})
	if multusOK {
		t.Run("Multus pod survives the upgrade and releases on delete", func(t *testing.T) {
			checkMultusPodSurvived(ctx, t, c, gpus[0], multusBefore)
		})
	}
	// helm uninstall: the agents go, a running pod keeps its device.
	t.Run("uninstall", func(t *testing.T) {
		pod := framework.WithResourceLimit(framework.BusyboxPod("default", "keep", "sleep", "3600"), railPool(2), 1)
		pod.Spec.NodeSelector = map[string]string{"kubernetes.io/hostname": gpus[0].Name}
		if _, err := c.CreatePod(ctx, pod); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.DeletePod(context.Background(), "default", "keep") })
		p, err := c.WaitForPodPhase(ctx, "default", "keep", corev1.PodRunning)
		if err != nil {
			t.Fatal(err)
		}
		before, err := c.Exec(ctx, "default", "keep", "main", "ls", "/dev/infiniband")
		if err != nil || !strings.Contains(before, "uverbs") {
			t.Fatalf("/dev/infiniband in the pod: %q %v", before, err)
		}
		uninstalled = true
		uninstall(t, c, stream)
		after, err := c.Client.CoreV1().Pods("default").Get(ctx, "keep", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if after.Status.Phase != corev1.PodRunning || after.Status.ContainerStatuses[0].ContainerID != p.Status.ContainerStatuses[0].ContainerID {
			t.Fatalf("the pod changed at uninstall: %s %+v", after.Status.Phase, after.Status.ContainerStatuses)
		}
		if got, err := c.Exec(ctx, "default", "keep", "main", "ls", "/dev/infiniband"); err != nil || got != before {
			t.Errorf("/dev/infiniband after uninstall %q (%v), before %q", got, err, before)
		}
	})
}

func waitDaemonSet(ctx context.Context, t *testing.T, c *framework.MultiCluster, want int) *appsv1.DaemonSet {
	t.Helper()
	var ds *appsv1.DaemonSet
	poll(ctx, t, "the agent DaemonSet ready on every GPU node", func(ctx context.Context) (bool, string) {
		list, err := c.Client.AppsV1().DaemonSets(releaseNS).List(ctx, metav1.ListOptions{})
		if err != nil || len(list.Items) != 1 {
			return false, "no DaemonSet"
		}
		ds = &list.Items[0]
		s := ds.Status
		return int(s.DesiredNumberScheduled) == want && int(s.NumberReady) == want && int(s.UpdatedNumberScheduled) == want,
			strings.Join([]string{"desired", itoa(s.DesiredNumberScheduled), "ready", itoa(s.NumberReady)}, " ")
	})
	return ds
}

// checkAgentPods: one agent pod per GPU node, each made by the DaemonSet
// controller (its controller reference), none on the control-plane node.
func checkAgentPods(ctx context.Context, t *testing.T, c *framework.MultiCluster, ds *appsv1.DaemonSet, gpus []framework.NodeInfo) {
	t.Helper()
	sel := metav1.FormatLabelSelector(ds.Spec.Selector)
	pods, err := c.Client.CoreV1().Pods(releaseNS).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		t.Fatal(err)
	}
	var nodes []string
	for _, p := range pods.Items {
		ref := metav1.GetControllerOf(&p)
		if ref == nil || ref.UID != ds.UID {
			t.Errorf("agent pod %s: controller %v, want the DaemonSet %s", p.Name, ref, ds.UID)
		}
		if p.Status.Phase != corev1.PodRunning {
			t.Errorf("agent pod %s on %s: %s", p.Name, p.Spec.NodeName, p.Status.Phase)
		}
		nodes = append(nodes, p.Spec.NodeName)
	}
	var want []string
	for _, n := range gpus {
		want = append(want, n.Name)
	}
	slices.Sort(nodes)
	if !slices.Equal(nodes, want) {
		t.Fatalf("agent pods on %v, want one on each GPU node %v", nodes, want)
	}
}

// uninstall deletes what was applied (as helm uninstall does, the
// namespace included); the controllers remove the agent pods and the
// namespace, and every GPU node's pools go to zero.
func uninstall(t *testing.T, c *framework.MultiCluster, stream string) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if !deleteRelease(ctx, t, c, stream, releaseNS) {
		return
	}
	for _, n := range c.Info.GPUNodes() {
		poll(ctx, t, n.Name+" pools gone", func(ctx context.Context) (bool, string) {
			v, err := allocatable(ctx, c, n.Name, railPool(0))
			if err != nil {
				return false, err.Error()
			}
			return v == 0, itoa(int32(v))
		})
	}
}
