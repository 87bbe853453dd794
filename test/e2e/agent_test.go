//go:build e2e

package e2e

import (
	"context"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/railyard-io/railyard/internal/fakesysfs"
	"github.com/railyard-io/railyard/test/e2e/framework"
)

// TestAgentWithRealKubelet runs bin/railyard-agent against the real kubelet
// on a fake dgx-h100 sysfs tree (8 PFs in one pool, 4 VFs in another) with
// fake RDMA device nodes. The subtests run in order and share the agent and
// a "holder" pod that keeps 2 PFs and 1 VF allocated throughout.
func TestAgentWithRealKubelet(t *testing.T) {
	c := suite.Cluster(t)
	ctx := framework.Context(t, 10*time.Minute)
	dir, err := os.MkdirTemp(c.RunDir(), "agent-")
	if err != nil {
		t.Fatal(err)
	}
	env := newAgentEnv(t, dir)
	t.Cleanup(func() {
		cctx := framework.Context(t, 2*time.Minute)
		_ = c.DeletePods(cctx, "default", "holder", "too-many", "filler", "one-more", "after-agent-restart")
		_ = env.stopAgent(c)
	})

	start := time.Now()
	env.startAgent(t, c)
	if !t.Run("registers and node allocatable shows the pools", func(t *testing.T) {
		wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		if err := c.WaitForNodeAllocatable(wctx, resPF, 8); err != nil {
			t.Fatal(err)
		}
		t.Logf("agent start to allocatable %s=8: %v", resPF, time.Since(start).Round(time.Millisecond))
		if err := c.WaitForNodeAllocatable(wctx, resVF, 4); err != nil {
			t.Fatal(err)
		}
		n, err := c.Node(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got := n.Status.Capacity[resPF]; got.Value() != 8 {
			t.Errorf("capacity %s = %s, want 8", resPF, got.String())
		}
	}) {
		t.FailNow()
	}

	var holderPFs []string
	t.Run("pod gets env vars and only its own device nodes", func(t *testing.T) {
		pod := framework.BusyboxPod("default", "holder", "sleep", "3600")
		framework.WithResourceLimit(pod, resPF, 2)
		framework.WithResourceLimit(pod, resVF, 1)
		if _, err := c.CreatePod(ctx, pod); err != nil {
			t.Fatal(err)
		}
		if _, err := c.WaitForPodPhase(ctx, "default", "holder", corev1.PodRunning); err != nil {
			t.Fatal(err)
		}
		holderPFs = podDevices(ctx, t, c, "holder", envPF)
		vfs := podDevices(ctx, t, c, "holder", envVF)
		if len(holderPFs) != 2 || len(vfs) != 1 {
			t.Fatalf("holder got PFs %v and VFs %v, want 2 and 1", holderPFs, vfs)
		}
		for _, pf := range holderPFs {
			if !slices.Contains(mapValues(env.PFs), pf) {
				t.Errorf("PF %s is not in the PF pool %v", pf, env.PFs)
			}
		}
		if !slices.Contains(env.VFs, vfs[0]) {
			t.Errorf("VF %s is not in the VF pool %v", vfs[0], env.VFs)
		}
		info := podEnv(ctx, t, c, "holder", envPF+"_INFO")
		for _, pf := range holderPFs {
			if !strings.Contains(info, `"`+pf+`"`) || !strings.Contains(info, "/dev/infiniband/"+env.Uverbs[pf]) {
				t.Errorf("%s_INFO = %s, want an entry for %s with /dev/infiniband/%s", envPF, info, pf, env.Uverbs[pf])
			}
		}
		got := devNodes(ctx, t, c, "holder")
		want := env.expectedNodes(t, append(slices.Clone(holderPFs), vfs...)...)
		if !slices.Equal(got, want) {
			t.Errorf("/dev/infiniband in the pod = %v, want exactly %v", got, want)
		}
		// The nodes are character devices with the host's numbers.
		out, err := c.Exec(ctx, "default", "holder", "main", "ls", "-l", "/dev/infiniband/"+env.Uverbs[holderPFs[0]])
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(out, "c") || !strings.Contains(out, "231,") {
			t.Errorf("ls -l of the uverbs node in the pod = %q, want a char device 231,N", out)
		}
	})

	t.Run("pod asking for more than exists stays Pending", func(t *testing.T) {
		pod := framework.WithResourceLimit(framework.BusyboxPod("default", "too-many", "true"), resPF, 9)
		if _, err := c.CreatePod(ctx, pod); err != nil {
			t.Fatal(err)
		}
		ev, err := c.WaitForEvent(ctx, "default", "too-many", "FailedScheduling")
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(ev.Message, "Insufficient "+resPF) {
			t.Errorf("FailedScheduling message %q does not name Insufficient %s", ev.Message, resPF)
		}
		time.Sleep(2 * time.Second)
		p, err := c.Client.CoreV1().Pods("default").Get(ctx, "too-many", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if p.Status.Phase != corev1.PodPending || p.Spec.NodeName != "" {
			t.Errorf("pod is %s on %q, want Pending and unscheduled", p.Status.Phase, p.Spec.NodeName)
		}
		if err := c.DeletePod(ctx, "default", "too-many"); err != nil {
			t.Fatal(err)
		}
	})

	// fillAndCheck runs a pod taking the 6 PFs the holder leaves, checks they
	// are disjoint from the holder's and that its env and device nodes
	// match, that one more PF pod stays Pending, and cleans up.
	fillAndCheck := func(t *testing.T) {
		t.Helper()
		filler := framework.WithResourceLimit(framework.BusyboxPod("default", "filler", "sleep", "3600"), resPF, 6)
		if _, err := c.CreatePod(ctx, filler); err != nil {
			t.Fatal(err)
		}
		if _, err := c.WaitForPodPhase(ctx, "default", "filler", corev1.PodRunning); err != nil {
			t.Fatal(err)
		}
		got := podDevices(ctx, t, c, "filler", envPF)
		if len(got) != 6 {
			t.Fatalf("filler got %v, want 6 PFs", got)
		}
		for _, d := range got {
			if slices.Contains(holderPFs, d) {
				t.Errorf("filler got %s, which the holder still has (holder %v, filler %v)", d, holderPFs, got)
			}
		}
		if nodes, want := devNodes(ctx, t, c, "filler"), env.expectedNodes(t, got...); !slices.Equal(nodes, want) {
			t.Errorf("filler /dev/infiniband = %v, want %v", nodes, want)
		}
		hca := podEnv(ctx, t, c, "filler", "NCCL_IB_HCA")
		var wantHCA []string
		for _, d := range got {
			wantHCA = append(wantHCA, env.RDMA[d])
		}
		gotHCA := strings.Split(strings.TrimPrefix(strings.TrimSpace(hca), "="), ",")
		sort.Strings(gotHCA)
		sort.Strings(wantHCA)
		if !strings.HasPrefix(hca, "=") || !slices.Equal(gotHCA, wantHCA) {
			t.Errorf("NCCL_IB_HCA = %q, want =<%v>", hca, wantHCA)
		}
		one := framework.WithResourceLimit(framework.BusyboxPod("default", "one-more", "true"), resPF, 1)
		if _, err := c.CreatePod(ctx, one); err != nil {
			t.Fatal(err)
		}
		if _, err := c.WaitForEvent(ctx, "default", "one-more", "FailedScheduling"); err != nil {
			t.Error(err)
		}
		if err := c.DeletePods(ctx, "default", "one-more", "filler"); err != nil {
			t.Fatal(err)
		}
	}

	// holderIntact checks the holder runs the same container, unrestarted,
	// with the same devices.
	holderID := func(t *testing.T) string {
		t.Helper()
		p, err := c.Client.CoreV1().Pods("default").Get(ctx, "holder", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if p.Status.Phase != corev1.PodRunning || len(p.Status.ContainerStatuses) != 1 {
			t.Fatalf("holder is %s", p.Status.Phase)
		}
		s := p.Status.ContainerStatuses[0]
		if s.RestartCount != 0 {
			t.Errorf("holder restarted %d times", s.RestartCount)
		}
		return s.ContainerID
	}

	t.Run("kubelet restart loses nothing", func(t *testing.T) {
		if holderPFs == nil {
			t.Skip("no holder pod")
		}
		before := holderID(t)
		start := time.Now()
		if err := c.RestartKubelet(ctx); err != nil {
			t.Fatal(err)
		}
		wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		defer cancel()
		// The kubelet forgets plugins when it restarts: allocatable is back
		// only once the agent has registered again.
		waitPoolsFull(wctx, t, c, "")
		t.Logf("kubelet restart to allocatable restored: %v", time.Since(start).Round(time.Millisecond))
		if after := holderID(t); after != before {
			t.Errorf("holder container changed from %s to %s", before, after)
		}
		fillAndCheck(t)
	})

	t.Run("agent restart loses nothing", func(t *testing.T) {
		if holderPFs == nil {
			t.Skip("no holder pod")
		}
		before := holderID(t)
		if err := env.stopAgent(c); err != nil {
			t.Fatal(err)
		}
		// The kubelet sees the plugin go and marks its devices unhealthy:
		// allocatable drops to 0 (capacity stays). Pods admitted in this gap
		// fail with UnexpectedAdmissionError, so wait for it to be visible
		// before restarting the agent.
		wctx0, cancel0 := context.WithTimeout(ctx, 10*time.Second)
		defer cancel0()
		if err := c.WaitForNodeAllocatable(wctx0, resPF, 0); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		env.startAgent(t, c)
		wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		defer cancel()
		waitPoolsFull(wctx, t, c, "")
		t.Logf("agent restart to allocatable restored: %v", time.Since(start).Round(time.Millisecond))
		// A pod whose devices the new agent allocates.
		pod := framework.WithResourceLimit(framework.BusyboxPod("default", "after-agent-restart", "true"), resVF, 1)
		if _, err := c.CreatePod(ctx, pod); err != nil {
			t.Fatal(err)
		}
		if _, err := c.WaitForPodPhase(ctx, "default", "after-agent-restart", corev1.PodSucceeded); err != nil {
			t.Fatal(err)
		}
		if err := c.DeletePod(ctx, "default", "after-agent-restart"); err != nil {
			t.Fatal(err)
		}
		if after := holderID(t); after != before {
			t.Errorf("holder container changed from %s to %s", before, after)
		}
		fillAndCheck(t)
	})

	t.Run("port down drops allocatable within 5s and restores it", func(t *testing.T) {
		// mlx5_0 is ibp24s0, a PF of the PF pool whose two VFs are in the
		// VF pool: its port going down makes 1 PF and 2 VFs unhealthy.
		pf := env.PFs["ibp24s0"]
		rdma := env.RDMA[pf]
		start := time.Now()
		if err := fakesysfs.SetPortState(env.SysfsDir, rdma, 1, fakesysfs.PortDown); err != nil {
			t.Fatal(err)
		}
		wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		if err := c.WaitForNodeAllocatable(wctx, resPF, 7); err != nil {
			t.Fatalf("%s port 1 DOWN: %v", rdma, err)
		}
		if err := c.WaitForNodeAllocatable(wctx, resVF, 2); err != nil {
			t.Fatalf("%s port 1 DOWN: %v", rdma, err)
		}
		t.Logf("port DOWN to allocatable %s=7, %s=2: %v", resPF, resVF, time.Since(start).Round(time.Millisecond))
		n, err := c.Node(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got := n.Status.Capacity[resPF]; got.Value() != 8 {
			t.Errorf("capacity %s = %s while a port is down, want 8 (unhealthy devices stay in capacity)", resPF, got.String())
		}

		start = time.Now()
		if err := fakesysfs.SetPortState(env.SysfsDir, rdma, 1, fakesysfs.PortActive); err != nil {
			t.Fatal(err)
		}
		wctx2, cancel2 := context.WithTimeout(ctx, 5*time.Second)
		defer cancel2()
		waitPoolsFull(wctx2, t, c, rdma+" port 1 ACTIVE again")
		t.Logf("port ACTIVE to allocatable restored: %v", time.Since(start).Round(time.Millisecond))
	})
}

// podDevices returns the sorted device IDs in a container's env variable.
func podDevices(ctx context.Context, t *testing.T, c *framework.Cluster, pod, env string) []string {
	t.Helper()
	ids := strings.Split(strings.TrimSpace(podEnv(ctx, t, c, pod, env)), ",")
	sort.Strings(ids)
	return ids
}

// podEnv returns an environment variable of a running pod's container
// (busybox has no printenv).
func podEnv(ctx context.Context, t *testing.T, c *framework.Cluster, pod, name string) string {
	t.Helper()
	out, err := c.Exec(ctx, "default", pod, "main", "sh", "-c", `printf '%s' "$`+name+`"`)
	if err != nil {
		t.Fatal(err)
	}
	if out == "" {
		t.Fatalf("pod %s has no %s", pod, name)
	}
	return out
}

// devNodes returns the sorted entries of /dev/infiniband in a container.
func devNodes(ctx context.Context, t *testing.T, c *framework.Cluster, pod string) []string {
	t.Helper()
	out, err := c.Exec(ctx, "default", pod, "main", "ls", "-1", "/dev/infiniband")
	if err != nil {
		t.Fatal(err)
	}
	nodes := strings.Fields(out)
	sort.Strings(nodes)
	return nodes
}

func mapValues(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

// waitPoolsFull waits until node allocatable shows every device of both
// pools (8 PFs, 4 VFs); why, when set, prefixes the failure.
func waitPoolsFull(ctx context.Context, t *testing.T, c *framework.Cluster, why string) {
	t.Helper()
	for res, n := range map[corev1.ResourceName]int64{resPF: 8, resVF: 4} {
		if err := c.WaitForNodeAllocatable(ctx, res, n); err != nil {
			if why != "" {
				t.Fatalf("%s: %v", why, err)
			}
			t.Fatal(err)
		}
	}
}
