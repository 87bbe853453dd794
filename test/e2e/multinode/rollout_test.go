//go:build e2e

package multinode

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/railyard-io/railyard/test/e2e/framework"
)

// testRollout applies the chart with a changed value (helm upgrade) while
// a pod holds a device of rail 1 on every GPU node: the DaemonSet
// controller replaces the agents one node at a time (maxUnavailable 1:
// never fewer than N-1 agents ready), each holder keeps its container, and
// kubelet's accounting stays right (each node serves the rail again, the
// held device stays held: one more pod asking for it does not fit).
func testRollout(ctx context.Context, t *testing.T, c *framework.MultiCluster, stream string) {
	gpus := c.Info.GPUNodes()
	holders := map[string]string{} // node -> container ID
	for _, n := range gpus {
		name := "hold-" + n.Name
		pod := framework.WithResourceLimit(framework.BusyboxPod("default", name, "sleep", "3600"), railPool(1), 1)
		pod.Spec.NodeSelector = map[string]string{"kubernetes.io/hostname": n.Name}
		if _, err := c.CreatePod(ctx, pod); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.DeletePod(context.Background(), "default", name) })
		p, err := c.WaitForPodPhase(ctx, "default", name, corev1.PodRunning)
		if err != nil {
			t.Fatal(err)
		}
		holders[n.Name] = p.Status.ContainerStatuses[0].ContainerID
	}
	ds := waitDaemonSet(ctx, t, c, len(gpus))
	sel := metav1.FormatLabelSelector(ds.Spec.Selector)
	old := map[string]bool{}
	pods, err := c.Client.CoreV1().Pods(releaseNS).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		old[p.Name] = true
	}

	start := time.Now()
	if out, err := kubectl(ctx, c, stream, "apply", "-f", "-"); err != nil {
		t.Fatalf("kubectl apply (upgrade): %v\n%s", err, out)
	}
	minReady, readyAt := len(gpus), map[string]time.Duration{}
	poll(ctx, t, "every agent replaced and ready", func(ctx context.Context) (bool, string) {
		pods, err := c.Client.CoreV1().Pods(releaseNS).List(ctx, metav1.ListOptions{LabelSelector: sel})
		if err != nil {
			return false, err.Error()
		}
		ready, fresh := 0, 0
		for _, p := range pods.Items {
			if !podReady(&p) {
				continue
			}
			ready++
			if !old[p.Name] {
				fresh++
				if _, seen := readyAt[p.Spec.NodeName]; !seen {
					readyAt[p.Spec.NodeName] = time.Since(start)
				}
			}
		}
		minReady = min(minReady, ready)
		return fresh == len(gpus) && len(pods.Items) == len(gpus), itoa(fresh) + " new ready of " + itoa(len(pods.Items))
	})
	total := time.Since(start)
	if minReady < len(gpus)-1 {
		t.Errorf("only %d of %d agents were ready at one point (maxUnavailable 1)", minReady, len(gpus))
	}
	var order []time.Duration
	for _, n := range gpus {
		order = append(order, readyAt[n.Name])
	}
	slices.Sort(order)
	t.Logf("rollout over %d nodes: %v (new agent ready at %v after the apply)", len(gpus), total.Round(time.Millisecond), order)

	for _, n := range gpus {
		poll(ctx, t, n.Name+" serves rail 1 again", func(ctx context.Context) (bool, string) {
			v, err := allocatable(ctx, c, n.Name, railPool(1))
			return err == nil && v == 1, itoa(v)
		})
		p, err := c.Client.CoreV1().Pods("default").Get(ctx, "hold-"+n.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if p.Status.Phase != corev1.PodRunning || p.Status.ContainerStatuses[0].ContainerID != holders[n.Name] || p.Status.ContainerStatuses[0].RestartCount != 0 {
			t.Errorf("holder on %s changed during the rollout: %s %+v", n.Name, p.Status.Phase, p.Status.ContainerStatuses)
		}
	}
	// The device stays held: one more pod asking for it fits nowhere.
	extra := framework.WithResourceLimit(framework.BusyboxPod("default", "hold-extra", "sleep", "3600"), railPool(1), 1)
	if _, err := c.CreatePod(ctx, extra); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.DeletePod(context.Background(), "default", "hold-extra") })
	if _, err := c.WaitForEvent(ctx, "default", "hold-extra", "FailedScheduling"); err != nil {
		t.Fatal(err)
	}
	if p, err := c.Client.CoreV1().Pods("default").Get(ctx, "hold-extra", metav1.GetOptions{}); err != nil || p.Spec.NodeName != "" {
		t.Errorf("a pod asking for a held device was bound to %q (%v)", p.Spec.NodeName, err)
	}
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
