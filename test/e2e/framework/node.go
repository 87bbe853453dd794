//go:build e2e

package framework

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// permanent marks an error that ends polling at once.
type permanent struct{ err error }

func (p permanent) Error() string { return p.err.Error() }
func (p permanent) Unwrap() error { return p.err }

// poll calls f every interval until it returns true, a permanent error, or
// ctx ends. Other errors are retried and reported if time runs out.
func poll(ctx context.Context, interval time.Duration, what string, f func(context.Context) (bool, error)) error {
	var last error
	for {
		done, err := f(ctx)
		var perm permanent
		if errors.As(err, &perm) {
			return fmt.Errorf("%s: %w", what, perm.err)
		}
		if err != nil {
			last = err
		} else if done {
			return nil
		}
		select {
		case <-ctx.Done():
			if last != nil {
				return fmt.Errorf("%s: %w (last error: %w)", what, ctx.Err(), last)
			}
			return fmt.Errorf("%s: %w", what, ctx.Err())
		case <-time.After(interval):
		}
	}
}

// Node returns the cluster's node.
func (c *Cluster) Node(ctx context.Context) (*corev1.Node, error) {
	n, err := c.Client.CoreV1().Nodes().Get(ctx, c.NodeName, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("get node %s: %w", c.NodeName, err)
	}
	return n, nil
}

// NodeReady reports the node's Ready condition (false if missing).
func NodeReady(n *corev1.Node) bool {
	for _, cond := range n.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			return cond.Status == corev1.ConditionTrue
		}
	}
	return false
}

// WaitForNodeReady waits until the node exists and is Ready.
func (c *Cluster) WaitForNodeReady(ctx context.Context) error {
	return poll(ctx, 200*time.Millisecond, "node "+c.NodeName+" Ready", func(ctx context.Context) (bool, error) {
		n, err := c.Node(ctx)
		if err != nil {
			return false, err
		}
		return NodeReady(n), nil
	})
}

// removeNotReadyTaint removes node.kubernetes.io/not-ready, which nothing
// else removes without a controller manager.
func (c *Cluster) removeNotReadyTaint(ctx context.Context) error {
	return removeNotReadyTaint(ctx, c.Client, c.NodeName)
}

func removeNotReadyTaint(ctx context.Context, client kubernetes.Interface, node string) error {
	return poll(ctx, 200*time.Millisecond, "remove not-ready taint of "+node, func(ctx context.Context) (bool, error) {
		n, err := client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		var keep []corev1.Taint
		for _, t := range n.Spec.Taints {
			if t.Key != corev1.TaintNodeNotReady {
				keep = append(keep, t)
			}
		}
		if len(keep) == len(n.Spec.Taints) {
			return true, nil
		}
		patch, err := json.Marshal(map[string]any{
			"metadata": map[string]any{"resourceVersion": n.ResourceVersion},
			"spec":     map[string]any{"taints": keep},
		})
		if err != nil {
			return false, err
		}
		_, err = client.CoreV1().Nodes().Patch(ctx, n.Name, types.MergePatchType, patch, metav1.PatchOptions{})
		return false, err // re-check on the next round
	})
}

// NodeAllocatable returns the node's allocatable quantity of a resource
// (zero if absent).
func (c *Cluster) NodeAllocatable(ctx context.Context, name corev1.ResourceName) (resource.Quantity, error) {
	n, err := c.Node(ctx)
	if err != nil {
		return resource.Quantity{}, err
	}
	return n.Status.Allocatable[name], nil
}

// WaitForNodeAllocatable waits until the node's allocatable quantity of the
// resource equals want.
func (c *Cluster) WaitForNodeAllocatable(ctx context.Context, name corev1.ResourceName, want int64) error {
	return poll(ctx, 100*time.Millisecond, fmt.Sprintf("allocatable %s = %d", name, want), func(ctx context.Context) (bool, error) {
		q, err := c.NodeAllocatable(ctx, name)
		if err != nil {
			return false, err
		}
		return q.Value() == want, nil
	})
}

// KubeletHealthy checks the kubelet's healthz endpoint once.
func (c *Cluster) KubeletHealthy(ctx context.Context) error {
	hc := &http.Client{Timeout: 2 * time.Second}
	return httpOK(ctx, hc, "http://127.0.0.1:"+strconv.Itoa(c.kubelet.HealthzPort)+"/healthz")
}

// KubeletSocket is the kubelet's device plugin registration socket.
func (c *Cluster) KubeletSocket() string { return filepath.Join(DevicePluginDir, "kubelet.sock") }

// PodResourcesSocket is the kubelet's PodResources API socket.
func (c *Cluster) PodResourcesSocket() string {
	return filepath.Join(c.KubeletRootDir, "pod-resources", "kubelet.sock")
}

// StopKubelet stops the kubelet (SIGTERM, then SIGKILL after 10 s). Pods keep
// running in containerd.
func (c *Cluster) StopKubelet() error {
	c.mu.Lock()
	p := c.procs["kubelet"]
	c.mu.Unlock()
	if p == nil {
		return fmt.Errorf("stop kubelet: not running")
	}
	if err := p.Stop(10 * time.Second); err != nil {
		return fmt.Errorf("stop kubelet: %w", err)
	}
	c.mu.Lock()
	delete(c.procs, "kubelet")
	c.mu.Unlock()
	return nil
}

// StartKubelet starts the kubelet again with the same configuration and
// waits for its healthz endpoint (not for the node to be Ready).
func (c *Cluster) StartKubelet(ctx context.Context) error {
	c.mu.Lock()
	running := c.procs["kubelet"] != nil
	c.mu.Unlock()
	if running {
		return fmt.Errorf("start kubelet: already running")
	}
	p, err := startKubelet(ctx, c.kubelet)
	return c.track("kubelet", p, err)
}

// RestartKubelet stops and starts the kubelet, then waits until the node
// reports Ready with a heartbeat newer than the last one the old kubelet
// posted, i.e. a status from the new kubelet. The kubelet recreates its
// registration socket, so device plugins must register again.
func (c *Cluster) RestartKubelet(ctx context.Context) error {
	if err := c.StopKubelet(); err != nil {
		return err
	}
	// Nothing else writes the node's heartbeat: read it once the old kubelet
	// is gone.
	n, err := c.Node(ctx)
	if err != nil {
		return fmt.Errorf("restart kubelet: %w", err)
	}
	last := readyHeartbeat(n)
	if err := c.StartKubelet(ctx); err != nil {
		return err
	}
	return c.WaitForNodeReadyAfter(ctx, last)
}

func readyHeartbeat(n *corev1.Node) time.Time {
	for _, cond := range n.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			return cond.LastHeartbeatTime.Time
		}
	}
	return time.Time{}
}

// WaitForNodeReadyAfter waits until the node reports Ready with a heartbeat
// strictly after t. Heartbeats have one-second resolution, and the kubelet
// posts one at start and then on every change or every 10 s.
func (c *Cluster) WaitForNodeReadyAfter(ctx context.Context, t time.Time) error {
	return poll(ctx, 100*time.Millisecond, "node "+c.NodeName+" Ready after "+t.Format(time.RFC3339), func(ctx context.Context) (bool, error) {
		n, err := c.Node(ctx)
		if err != nil {
			return false, err
		}
		return NodeReady(n) && readyHeartbeat(n).After(t), nil
	})
}
