//go:build e2e

package e2e

import (
	"net"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/railyard-io/railyard/test/e2e/framework"
)

func TestNodeRegistersAndIsReady(t *testing.T) {
	c := suite.Cluster(t)
	ctx := framework.Context(t, time.Minute)
	n, err := c.Node(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !framework.NodeReady(n) {
		t.Fatalf("node %s is not Ready: %+v", n.Name, n.Status.Conditions)
	}
	for _, taint := range n.Spec.Taints {
		if taint.Key == corev1.TaintNodeNotReady {
			t.Errorf("node still has taint %v", taint)
		}
	}
	var internalIP string
	for _, a := range n.Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			internalIP = a.Address
		}
	}
	if internalIP != c.NodeIP {
		t.Errorf("node InternalIP = %q, want the bridge address %q", internalIP, c.NodeIP)
	}
	if got := n.Status.NodeInfo.KubeletVersion; got != "v1.35.8" {
		t.Errorf("kubelet version = %q, want v1.35.8", got)
	}
	if got := n.Status.NodeInfo.ContainerRuntimeVersion; !strings.HasPrefix(got, "containerd://") {
		t.Errorf("container runtime = %q, want containerd://...", got)
	}
	t.Logf("node %s Ready: kubelet %s, runtime %s, IP %s, allocatable cpu=%s memory=%s pods=%s",
		n.Name, n.Status.NodeInfo.KubeletVersion, n.Status.NodeInfo.ContainerRuntimeVersion, internalIP,
		n.Status.Allocatable.Cpu(), n.Status.Allocatable.Memory(), n.Status.Allocatable.Pods())
}

func TestBusyboxPodRunsCommandAndLogsOutput(t *testing.T) {
	c := suite.Cluster(t)
	ctx := framework.Context(t, 2*time.Minute)
	const name = "echo"
	pod := framework.BusyboxPod("default", name, "sh", "-c", `echo "hello from $(hostname)"; echo "args: $*"`, "sh", "one", "two")
	t.Cleanup(func() { _ = c.DeletePod(framework.Context(t, time.Minute), "default", name) })
	start := time.Now()
	if _, err := c.CreatePod(ctx, pod); err != nil {
		t.Fatal(err)
	}
	got, err := c.WaitForPodPhase(ctx, "default", name, corev1.PodSucceeded)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("pod start-to-Succeeded: %v", time.Since(start).Round(time.Millisecond))
	logs, err := c.PodLogs(ctx, "default", name, "main")
	if err != nil {
		t.Fatal(err)
	}
	want := "hello from echo\nargs: one two\n"
	if logs != want {
		t.Errorf("logs = %q, want %q", logs, want)
	}
	if got.Spec.NodeName != c.NodeName {
		t.Errorf("pod ran on %q, want %q", got.Spec.NodeName, c.NodeName)
	}
}

func TestPodGetsBridgeIPAndExecWorks(t *testing.T) {
	c := suite.Cluster(t)
	ctx := framework.Context(t, 2*time.Minute)
	const name = "sleeper"
	t.Cleanup(func() { _ = c.DeletePod(framework.Context(t, time.Minute), "default", name) })
	start := time.Now()
	if _, err := c.CreatePod(ctx, framework.BusyboxPod("default", name, "sleep", "3600")); err != nil {
		t.Fatal(err)
	}
	pod, err := c.WaitForPodPhase(ctx, "default", name, corev1.PodRunning)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("pod create-to-Running: %v", time.Since(start).Round(time.Millisecond))
	// The pod's address comes from host-local on the framework's bridge.
	if ip := net.ParseIP(pod.Status.PodIP); ip == nil || !c.Subnet.Contains(ip) || pod.Status.PodIP == c.NodeIP {
		t.Errorf("pod IP %q is not a pod address in the node's subnet (node %s)", pod.Status.PodIP, c.NodeIP)
	}
	out, err := c.Exec(ctx, "default", name, "main", "cat", "/etc/hostname")
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(out) != name {
		t.Errorf("exec cat /etc/hostname = %q, want %q", out, name)
	}
	out, err = c.Exec(ctx, "default", name, "main", "ip", "-4", "-o", "addr", "show", "eth0")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, " "+pod.Status.PodIP+"/") {
		t.Errorf("eth0 in the pod has %q, want address %s", out, pod.Status.PodIP)
	}
	// Exec reports the command's failure.
	if _, err := c.Exec(ctx, "default", name, "main", "sh", "-c", "exit 3"); err == nil {
		t.Error("exec of a failing command returned no error")
	}
}

func TestUnsatisfiableExtendedResourceStaysPending(t *testing.T) {
	c := suite.Cluster(t)
	ctx := framework.Context(t, 2*time.Minute)
	const name = "wants-nonexistent"
	pod := framework.WithResourceLimit(framework.BusyboxPod("default", name, "true"), "example.com/nonexistent", 1)
	t.Cleanup(func() { _ = c.DeletePod(framework.Context(t, time.Minute), "default", name) })
	if _, err := c.CreatePod(ctx, pod); err != nil {
		t.Fatal(err)
	}
	ev, err := c.WaitForEvent(ctx, "default", name, "FailedScheduling")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(ev.Message, "Insufficient example.com/nonexistent") {
		t.Errorf("FailedScheduling message = %q, want it to name Insufficient example.com/nonexistent", ev.Message)
	}
	// It stays Pending and unbound.
	time.Sleep(3 * time.Second)
	got, err := c.Client.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Status.Phase != corev1.PodPending || got.Spec.NodeName != "" {
		t.Errorf("pod phase %s on node %q, want Pending and unscheduled", got.Status.Phase, got.Spec.NodeName)
	}
}

func TestKubeletRestartKeepsNodeReadyAndPods(t *testing.T) {
	c := suite.Cluster(t)
	ctx := framework.Context(t, 3*time.Minute)
	const before, after = "before-restart", "after-restart"
	t.Cleanup(func() {
		cctx := framework.Context(t, time.Minute)
		_ = c.DeletePods(cctx, "default", before, after)
	})
	if _, err := c.CreatePod(ctx, framework.BusyboxPod("default", before, "sleep", "3600")); err != nil {
		t.Fatal(err)
	}
	p1, err := c.WaitForPodPhase(ctx, "default", before, corev1.PodRunning)
	if err != nil {
		t.Fatal(err)
	}
	containerID := p1.Status.ContainerStatuses[0].ContainerID

	start := time.Now()
	if err := c.RestartKubelet(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("kubelet restart to node Ready (fresh heartbeat): %v", time.Since(start).Round(time.Millisecond))
	n, err := c.Node(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !framework.NodeReady(n) {
		t.Fatalf("node not Ready after kubelet restart: %+v", n.Status.Conditions)
	}

	// The running pod survived with the same container, not restarted.
	p1, err = c.Client.CoreV1().Pods("default").Get(ctx, before, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p1.Status.Phase != corev1.PodRunning {
		t.Errorf("pod %s is %s after kubelet restart, want Running", before, p1.Status.Phase)
	}
	if s := p1.Status.ContainerStatuses[0]; s.ContainerID != containerID || s.RestartCount != 0 {
		t.Errorf("container after restart: id %s restarts %d, want id %s restarts 0", s.ContainerID, s.RestartCount, containerID)
	}
	// And the restarted kubelet runs new pods.
	if _, err := c.CreatePod(ctx, framework.BusyboxPod("default", after, "echo", "ok")); err != nil {
		t.Fatal(err)
	}
	if _, err := c.WaitForPodPhase(ctx, "default", after, corev1.PodSucceeded); err != nil {
		t.Fatal(err)
	}
}

func TestDryRunApplyValidatesWithoutStoring(t *testing.T) {
	c := suite.Cluster(t)
	ctx := framework.Context(t, time.Minute)
	objs, err := framework.DecodeObjects([]byte(`
apiVersion: v1
kind: ConfigMap
metadata:
  name: dry-cm
data:
  k: v
---
apiVersion: v1
kind: Pod
metadata:
  name: dry-pod
spec:
  containers:
  - name: main
    image: ` + framework.BusyboxImage + `
---
apiVersion: v1
kind: Pod
metadata:
  name: dry-invalid
spec:
  containers: []
`))
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 3 {
		t.Fatalf("decoded %d objects, want 3", len(objs))
	}
	results, err := c.DryRunApply(ctx, objs)
	if err == nil {
		t.Fatal("dry run of an invalid pod returned no error")
	}
	if results[0].Err != nil || results[1].Err != nil {
		t.Fatalf("valid objects rejected: %v, %v", results[0].Err, results[1].Err)
	}
	if results[2].Err == nil || !apierrors.IsInvalid(results[2].Err) {
		t.Errorf("invalid pod: err = %v, want an Invalid error", results[2].Err)
	}
	// The server defaulted the pod...
	policy, _, _ := unstructured.NestedString(results[1].Object.Object, "spec", "dnsPolicy")
	if policy != "ClusterFirst" {
		t.Errorf("dry-run pod dnsPolicy = %q, want the server default ClusterFirst", policy)
	}
	// ...and stored nothing.
	if _, err := c.Client.CoreV1().ConfigMaps("default").Get(ctx, "dry-cm", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("configmap after dry run: err = %v, want NotFound", err)
	}
	if _, err := c.Client.CoreV1().Pods("default").Get(ctx, "dry-pod", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("pod after dry run: err = %v, want NotFound", err)
	}
}
