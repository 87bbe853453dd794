package agent

import (
	"context"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/railyard-io/railyard/internal/rdmacounter"
)

// podJobs is the job of each pod on this node (rdmacounter.JobName of its
// labels and controller), which the counters' job_name label reads:
// kubelet's PodResources names a device's pod but carries no labels or
// owners. Empty until the agent watches its node's pods.
type podJobs struct {
	mu   sync.RWMutex
	jobs map[types.NamespacedName]string
}

// job is the job of pod namespace/name ("" when unknown or none).
func (p *podJobs) job(namespace, name string) string {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.jobs[types.NamespacedName{Namespace: namespace, Name: name}]
}

func (p *podJobs) set(pod *corev1.Pod) {
	key := types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}
	controller := ""
	if ref := metav1.GetControllerOf(pod); ref != nil {
		controller = ref.Name
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.jobs == nil {
		p.jobs = map[types.NamespacedName]string{}
	}
	if job := rdmacounter.JobName(pod.Labels, controller); job != "" {
		p.jobs[key] = job
	} else {
		delete(p.jobs, key)
	}
}

func (p *podJobs) remove(obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.jobs, types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name})
}

// watchPodJobs watches the pods of this node (a field selector on
// spec.nodeName: list and watch on pods, the chart's metrics.jobNames)
// for the counters' job_name, and returns the function that stops it.
// Without the permission it stops at the first refusal with one log line:
// the counters keep their pod labels and an empty job_name.
func (a *Agent) watchPodJobs(ctx context.Context, client kubernetes.Interface) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	f := ownInformers(client, "spec.nodeName", a.cfg.NodeName)
	inf := f.Core().V1().Pods().Informer()
	_ = inf.SetWatchErrorHandler(func(_ *cache.Reflector, err error) {
		if apierrors.IsForbidden(err) {
			a.log.Info("not allowed to list this node's pods: the RDMA counters' job_name stays empty (chart: metrics.jobNames)", "err", err)
			cancel()
			return
		}
		a.log.Error("watching this node's pods (the counters' job_name)", "err", err)
	})
	pod := func(obj any) {
		if p, ok := obj.(*corev1.Pod); ok && p.Spec.NodeName == a.cfg.NodeName {
			a.jobs.set(p)
		}
	}
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    pod,
		UpdateFunc: func(_, obj any) { pod(obj) },
		DeleteFunc: a.jobs.remove,
	})
	f.Start(ctx.Done())
	return func() {
		cancel()
		f.Shutdown()
	}
}
