//go:build e2e

package framework

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
)

// BusyboxPod returns a pod in namespace ns running command in the local
// busybox image, never restarted, with a 1 s termination grace period.
//
// The pod shares one PID namespace (shareProcessNamespace), so the pause
// container, not command, is PID 1. A PID 1 gets no default signal action:
// `sleep` or `sh` as PID 1 ignores SIGTERM, and every delete waited for
// the kubelet's 2 s minimum grace and its SIGKILL. As any other PID the
// command ends on SIGTERM at once, and deleting a pod takes about a second.
func BusyboxPod(ns, name string, command ...string) *corev1.Pod {
	grace := int64(1)
	share := true
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyNever,
			TerminationGracePeriodSeconds: &grace,
			ShareProcessNamespace:         &share,
			Containers: []corev1.Container{{
				Name:            "main",
				Image:           BusyboxImage,
				ImagePullPolicy: corev1.PullNever,
				Command:         command,
			}},
		},
	}
}

// WithResourceLimit adds limit (and the same request) of an extended resource
// to every container of pod and returns pod.
func WithResourceLimit(pod *corev1.Pod, name corev1.ResourceName, n int64) *corev1.Pod {
	for i := range pod.Spec.Containers {
		ct := &pod.Spec.Containers[i]
		if ct.Resources.Limits == nil {
			ct.Resources.Limits = corev1.ResourceList{}
		}
		if ct.Resources.Requests == nil {
			ct.Resources.Requests = corev1.ResourceList{}
		}
		ct.Resources.Limits[name] = *resource.NewQuantity(n, resource.DecimalSI)
		ct.Resources.Requests[name] = *resource.NewQuantity(n, resource.DecimalSI)
	}
	return pod
}

// CreatePod creates pod.
func (c *Cluster) CreatePod(ctx context.Context, pod *corev1.Pod) (*corev1.Pod, error) {
	p, err := c.Client.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("create pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return p, nil
}

// ErrPodTerminal is returned when a pod reached a terminal phase other than
// the one waited for.
var ErrPodTerminal = errors.New("pod reached another terminal phase")

// WaitForPodPhase waits until the pod is in one of phases. It fails early,
// with ErrPodTerminal, if the pod reaches a terminal phase (Succeeded,
// Failed) not in phases. The last pod seen is returned in every case.
func (c *Cluster) WaitForPodPhase(ctx context.Context, ns, name string, phases ...corev1.PodPhase) (*corev1.Pod, error) {
	var pod *corev1.Pod
	err := poll(ctx, 100*time.Millisecond, fmt.Sprintf("pod %s/%s in %v", ns, name, phases), func(ctx context.Context) (bool, error) {
		p, err := c.Client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		pod = p
		if slices.Contains(phases, p.Status.Phase) {
			return true, nil
		}
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			return false, permanent{fmt.Errorf("%w: %s", ErrPodTerminal, p.Status.Phase)}
		}
		return false, nil
	})
	if err != nil && pod != nil {
		err = fmt.Errorf("%w; pod phase %s (%s)", err, pod.Status.Phase, describeStatuses(pod))
	}
	return pod, err
}

func describeStatuses(p *corev1.Pod) string {
	var b bytes.Buffer
	for _, cond := range p.Status.Conditions {
		if cond.Status != corev1.ConditionTrue && cond.Message != "" {
			fmt.Fprintf(&b, "%s: %s; ", cond.Type, cond.Message)
		}
	}
	for _, s := range p.Status.ContainerStatuses {
		switch {
		case s.State.Waiting != nil:
			fmt.Fprintf(&b, "%s waiting: %s %s; ", s.Name, s.State.Waiting.Reason, s.State.Waiting.Message)
		case s.State.Terminated != nil:
			fmt.Fprintf(&b, "%s terminated: exit %d %s %s; ", s.Name, s.State.Terminated.ExitCode, s.State.Terminated.Reason, s.State.Terminated.Message)
		case s.State.Running != nil:
			fmt.Fprintf(&b, "%s running; ", s.Name)
		}
	}
	return b.String()
}

// PodLogs returns the logs of a container of a pod.
func (c *Cluster) PodLogs(ctx context.Context, ns, name, container string) (string, error) {
	data, err := c.Client.CoreV1().Pods(ns).GetLogs(name, &corev1.PodLogOptions{Container: container}).DoRaw(ctx)
	if err != nil {
		return "", fmt.Errorf("logs of %s/%s/%s: %w", ns, name, container, err)
	}
	return string(data), nil
}

// DeletePod deletes a pod and waits until it is gone. A missing pod is fine.
func (c *Cluster) DeletePod(ctx context.Context, ns, name string) error {
	return c.DeletePods(ctx, ns, name)
}

// DeletePods deletes the named pods at once and waits until all are gone:
// their kubelets tear them down side by side, not one after another.
// Missing pods are fine.
func (c *Cluster) DeletePods(ctx context.Context, ns string, names ...string) error {
	for _, name := range names {
		err := c.Client.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete pod %s/%s: %w", ns, name, err)
		}
	}
	for _, name := range names {
		err := poll(ctx, 100*time.Millisecond, fmt.Sprintf("pod %s/%s gone", ns, name), func(ctx context.Context) (bool, error) {
			_, err := c.Client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return true, nil
			}
			return false, err
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// WaitForEvent waits for an event with reason about the named object and
// returns it.
func (c *Cluster) WaitForEvent(ctx context.Context, ns, object, reason string) (*corev1.Event, error) {
	var found *corev1.Event
	sel := fields.Set{"involvedObject.name": object, "reason": reason}.AsSelector().String()
	err := poll(ctx, 200*time.Millisecond, fmt.Sprintf("event %s for %s/%s", reason, ns, object), func(ctx context.Context) (bool, error) {
		evs, err := c.Client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: sel})
		if err != nil {
			return false, err
		}
		if len(evs.Items) == 0 {
			return false, nil
		}
		found = &evs.Items[0]
		return true, nil
	})
	return found, err
}

// Kubectl runs the kubectl built with the cluster against it (admin
// kubeconfig) and returns its standard output; the error carries stderr.
func (c *Cluster) Kubectl(ctx context.Context, args ...string) ([]byte, error) {
	// --cache-dir: kubectl's discovery cache would go to ~/.kube otherwise.
	full := append([]string{"--kubeconfig", c.Kubeconfig, "--cache-dir", filepath.Join(c.dir, "kubectl-cache")}, args...)
	cmd := exec.CommandContext(ctx, filepath.Join(c.cfg.K8sBinDir, "kubectl"), full...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.Bytes(), fmt.Errorf("kubectl %v: %w: %s", args, err, stderr.String())
	}
	return stdout.Bytes(), nil
}

// Exec runs command in a container of a running pod (through the apiserver
// and the kubelet's streaming server, as `kubectl exec` does) and returns its
// standard output.
func (c *Cluster) Exec(ctx context.Context, ns, pod, container string, command ...string) (string, error) {
	args := []string{"exec", "-n", ns, pod, "-c", container, "--"}
	out, err := c.Kubectl(ctx, append(args, command...)...)
	return string(out), err
}
