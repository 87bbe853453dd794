// Package benchruntest is a fake kubelet for tests of bench run: it moves
// the pods of client-go's fake clientset through their phases as the
// scheduler and a kubelet would (there is no container runtime in unit
// tests), following a script per pod name, and serves their logs, which
// the fake clientset cannot (its logs are a constant). It also makes a
// pod's ResourceClaims from their templates, as the resourceclaim
// controller would, recording the script's address in their networkData
// as a DRA driver would. With
// InstallMPIOperator the fake API server serves MPIJobs through
// client-go's fake dynamic client, and a fake MPI Operator turns them into
// pods.
package benchruntest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/railyard-io/railyard/internal/benchrun"
)

// Script is what the fake kubelet does with one pod.
type Script struct {
	Unschedulable bool  // never scheduled
	RunPolls      int   // polls spent Running before exiting
	Exit          int32 // the container's exit code
	Log           string
	NeverExits    bool
	// ClaimIP is the address the fake DRA driver records (status.devices
	// networkData, in CIDR form) in the claims made for the pod's
	// spec.resourceClaims; "" records none.
	ClaimIP string
}

// FakeKubelet moves pods of a client-go fake clientset through their
// phases, following a Script per pod name (a pod without one is
// scheduled, runs and succeeds), and serves their logs.
type FakeKubelet struct {
	Client  kubernetes.Interface
	Dynamic dynamic.Interface
	scripts map[string]Script

	mu       sync.Mutex
	operator bool            // run the fake MPI Operator
	jobs     map[string]bool // MPIJobs whose pods were created, by ns/name
	polls    map[string]int
	nextIP   int
	created  map[string]*corev1.Pod // each pod as first seen (its spec as created)
	order    []string               // pod names in the order first seen
}

// New returns a fake kubelet over a new fake clientset.
func New(scripts map[string]Script) *FakeKubelet {
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{benchrun.MPIJobs: "MPIJobList"})
	return &FakeKubelet{Client: fake.NewClientset(), Dynamic: dyn, scripts: scripts, polls: map[string]int{}, created: map[string]*corev1.Pod{},
		jobs: map[string]bool{}}
}

// Run advances pods every few milliseconds until ctx is done; the test
// waits for it to stop before it ends.
func (k *FakeKubelet) Run(ctx context.Context, t *testing.T) {
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

func (k *FakeKubelet) step(ctx context.Context) {
	k.mu.Lock()
	if k.operator {
		k.operate(ctx)
	}
	k.mu.Unlock()
	pods, err := k.Client.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	for i := range pods.Items {
		p := &pods.Items[i]
		if k.created[p.Name] == nil {
			k.created[p.Name] = p.DeepCopy()
			k.order = append(k.order, p.Name)
		}
		s := k.scripts[p.Name]
		ct := p.Spec.Containers[0].Name
		switch {
		case p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed:
			continue
		case s.Unschedulable:
			p.Status.Phase = corev1.PodPending
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
				Reason: "Unschedulable", Message: "0/1 nodes are available: 1 Insufficient railyard.io/rdma_vf."}}
		case p.Spec.NodeName == "" && !k.claimsMade(ctx, p):
			// The resourceclaim controller makes a pod's claims from their
			// templates; without its template a pod stays Pending.
			p.Status.Phase = corev1.PodPending
		case p.Spec.NodeName == "":
			k.nextIP++
			p.Spec.NodeName = "node-a"
			p.Status.Phase = corev1.PodRunning
			p.Status.PodIP = fmt.Sprintf("10.217.0.%d", k.nextIP)
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}}
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: ct, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
		case s.NeverExits:
		case k.polls[p.Name] < s.RunPolls:
			k.polls[p.Name]++
			continue
		default:
			p.Status.Phase = corev1.PodSucceeded
			reason := "Completed"
			if s.Exit != 0 {
				p.Status.Phase, reason = corev1.PodFailed, "Error"
			}
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: ct, State: corev1.ContainerState{
				Terminated: &corev1.ContainerStateTerminated{ExitCode: s.Exit, Reason: reason}}}}
		}
		// The fake clientset has no binding subresource: the node name
		// goes in with an update, the status with UpdateStatus.
		if _, err := k.Client.CoreV1().Pods(p.Namespace).Update(ctx, p, metav1.UpdateOptions{}); err != nil {
			continue
		}
		_, _ = k.Client.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{})
	}
}

// claimsMade makes the claims of p's spec.resourceClaims from their
// templates, as the resourceclaim controller does (named <pod>-<claim>,
// allocated, with the script's ClaimIP in their networkData), and lists
// them in p's status. It reports false while a template is missing.
func (k *FakeKubelet) claimsMade(ctx context.Context, p *corev1.Pod) bool {
	p.Status.ResourceClaimStatuses = nil
	for _, rc := range p.Spec.ResourceClaims {
		if rc.ResourceClaimTemplateName == nil {
			continue
		}
		if _, err := k.Client.ResourceV1().ResourceClaimTemplates(p.Namespace).Get(ctx, *rc.ResourceClaimTemplateName, metav1.GetOptions{}); err != nil {
			return false
		}
		name := p.Name + "-" + rc.Name
		claim := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: name}}
		if ip := k.scripts[p.Name].ClaimIP; ip != "" {
			claim.Status.Devices = []resourceapi.AllocatedDeviceStatus{{Driver: "fake.railyard.io", Pool: "node-a", Device: "nic0",
				NetworkData: &resourceapi.NetworkDeviceData{InterfaceName: "eth1", IPs: []string{ip}}}}
		}
		if _, err := k.Client.ResourceV1().ResourceClaims(p.Namespace).Create(ctx, claim, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return false
		}
		p.Status.ResourceClaimStatuses = append(p.Status.ResourceClaimStatuses, corev1.PodResourceClaimStatus{Name: rc.Name, ResourceClaimName: &name})
	}
	return true
}

// FirstSeen returns the pod as it was created.
func (k *FakeKubelet) FirstSeen(name string) *corev1.Pod {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.created[name]
}

// Cluster is benchrun.Kube over the fake clientset with the scripted logs.
func (k *FakeKubelet) Cluster() benchrun.Cluster {
	return fakeLogs{Kube: benchrun.Kube{Client: k.Client, Dynamic: k.Dynamic}, k: k}
}

type fakeLogs struct {
	benchrun.Kube
	k *FakeKubelet
}

func (f fakeLogs) PodLogs(_ context.Context, _, pod, _ string, limit int64) ([]byte, error) {
	log := f.k.scripts[pod].Log
	if int64(len(log)) > limit {
		log = log[:limit]
	}
	return []byte(log), nil
}

// Order returns the pod names in the order the fake kubelet first saw
// them (the order they were created in, one poll apart at least).
func (k *FakeKubelet) Order() []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return append([]string(nil), k.order...)
}
