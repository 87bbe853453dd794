package benchrun

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
)

// script is what the fake kubelet does with one pod.
type script struct {
	unschedulable bool // never scheduled
	runPolls      int  // polls spent Running before exiting
	exit          int32
	log           string
	neverExits    bool
}

// fakeKubelet moves pods of a client-go fake clientset through their
// phases as the scheduler and a kubelet would (there is no container
// runtime in unit tests), following a script per pod name, and serves
// their logs: the fake clientset's own logs are a constant.
type fakeKubelet struct {
	client  kubernetes.Interface
	scripts map[string]script

	mu      sync.Mutex
	polls   map[string]int
	nextIP  int
	created map[string]*corev1.Pod // each pod as first seen (its spec as created)
}

func newFakeKubelet(scripts map[string]script) *fakeKubelet {
	return &fakeKubelet{client: fake.NewClientset(), scripts: scripts, polls: map[string]int{}, created: map[string]*corev1.Pod{}}
}

// run advances pods every few milliseconds until ctx is done.
func (k *fakeKubelet) run(ctx context.Context, t *testing.T) {
	t.Helper()
	done := make(chan struct{})
	t.Cleanup(func() { <-done })
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			k.step(ctx)
			time.Sleep(2 * time.Millisecond)
		}
	}()
}

func (k *fakeKubelet) step(ctx context.Context) {
	pods, err := k.client.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	for i := range pods.Items {
		p := &pods.Items[i]
		if k.created[p.Name] == nil {
			k.created[p.Name] = p.DeepCopy()
		}
		s := k.scripts[p.Name]
		ct := p.Spec.Containers[0].Name
		switch {
		case p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed:
			continue
		case s.unschedulable:
			p.Status.Phase = corev1.PodPending
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
				Reason: "Unschedulable", Message: "0/1 nodes are available: 1 Insufficient railyard.io/rdma_vf."}}
		case p.Spec.NodeName == "":
			k.nextIP++
			p.Spec.NodeName = "node-a"
			p.Status.Phase = corev1.PodRunning
			p.Status.PodIP = fmt.Sprintf("10.217.0.%d", k.nextIP)
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}}
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: ct, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
		case s.neverExits:
		case k.polls[p.Name] < s.runPolls:
			k.polls[p.Name]++
			continue
		default:
			p.Status.Phase = corev1.PodSucceeded
			reason := "Completed"
			if s.exit != 0 {
				p.Status.Phase, reason = corev1.PodFailed, "Error"
			}
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: ct, State: corev1.ContainerState{
				Terminated: &corev1.ContainerStateTerminated{ExitCode: s.exit, Reason: reason}}}}
		}
		// The fake clientset has no binding subresource: the node name
		// goes in with an update, the status with UpdateStatus.
		if _, err := k.client.CoreV1().Pods(p.Namespace).Update(ctx, p, metav1.UpdateOptions{}); err != nil {
			continue
		}
		_, _ = k.client.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{})
	}
}

// firstSeen returns the pod as it was created.
func (k *fakeKubelet) firstSeen(name string) *corev1.Pod {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.created[name]
}

// cluster is Kube over the fake clientset with the scripted logs.
func (k *fakeKubelet) cluster() Cluster { return fakeLogs{Kube: Kube{Client: k.client}, k: k} }

type fakeLogs struct {
	Kube
	k *fakeKubelet
}

func (f fakeLogs) PodLogs(_ context.Context, _, pod, _ string, limit int64) ([]byte, error) {
	log := f.k.scripts[pod].log
	if int64(len(log)) > limit {
		log = log[:limit]
	}
	return []byte(log), nil
}
