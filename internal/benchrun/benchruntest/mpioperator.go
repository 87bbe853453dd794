package benchruntest

import (
	"context"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	fakediscovery "k8s.io/client-go/discovery/fake"

	"github.com/railyard-io/railyard/internal/benchrun"
)

// LauncherPod is the name the fake MPI Operator gives an MPIJob's
// launcher pod. (The real one's launcher is a batch Job's pod, named
// <job>-launcher-<random>.)
func LauncherPod(job string) string { return job + "-launcher-fk1" }

// WorkerPod is the name of an MPIJob's i-th worker pod, as the real
// operator names it.
func WorkerPod(job string, i int) string { return fmt.Sprintf("%s-worker-%d", job, i) }

// InstallMPIOperator makes the fake API server serve MPIJobs (its
// discovery lists kubeflow.org/v2beta1 mpijobs: the CRD is installed) and,
// with controller, runs a fake MPI Operator: for every MPIJob it creates
// the launcher pod and the worker pods from the MPIJob's templates with
// the operator's labels, sets the MPIJob's Created, Running, Succeeded or
// Failed condition from its launcher pod's phase, and deletes an MPIJob's
// pods once the MPIJob is gone (the garbage collector's part). It leaves
// the workers of a finished job in place (the real operator deletes them,
// cleanPodPolicy Running), and a launcher that exits non-zero fails at
// once (the real launcher Job retries up to its backoff limit). Call it
// before Run.
func (k *FakeKubelet) InstallMPIOperator(controller bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	d := k.Client.Discovery().(*fakediscovery.FakeDiscovery)
	d.Resources = append(d.Resources, &metav1.APIResourceList{
		GroupVersion: benchrun.MPIJobs.GroupVersion().String(),
		APIResources: []metav1.APIResource{{Name: benchrun.MPIJobs.Resource, Namespaced: true, Kind: "MPIJob"}},
	})
	k.operator = controller
}

// operate is one pass of the fake MPI Operator; k.mu is held.
func (k *FakeKubelet) operate(ctx context.Context) {
	jobs, err := k.Dynamic.Resource(benchrun.MPIJobs).Namespace(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return
	}
	present := map[string]bool{}
	for i := range jobs.Items {
		job := &jobs.Items[i]
		key := job.GetNamespace() + "/" + job.GetName()
		present[key] = true
		if !k.jobs[key] {
			if k.startJob(ctx, job) == nil {
				k.jobs[key] = true
				k.setCondition(ctx, job, "Created", "MPIJobCreated", "MPIJob "+key+" is created.")
			}
			continue
		}
		l, err := k.Client.CoreV1().Pods(job.GetNamespace()).Get(ctx, LauncherPod(job.GetName()), metav1.GetOptions{})
		if err != nil {
			continue
		}
		switch l.Status.Phase {
		case corev1.PodRunning:
			k.setCondition(ctx, job, "Running", "MPIJobRunning", "MPIJob "+key+" is running.")
		case corev1.PodSucceeded:
			k.setCondition(ctx, job, "Succeeded", "MPIJobSucceeded", "MPIJob "+key+" successfully completed.")
		case corev1.PodFailed:
			k.setCondition(ctx, job, "Failed", "BackoffLimitExceeded", "Job has reached the specified backoff limit")
		}
	}
	for key := range k.jobs {
		if present[key] {
			continue
		}
		ns, name, _ := strings.Cut(key, "/")
		pods, err := k.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: benchrun.LabelMPIJobName + "=" + name})
		if err != nil {
			continue
		}
		for _, p := range pods.Items {
			_ = k.Client.CoreV1().Pods(ns).Delete(ctx, p.Name, metav1.DeleteOptions{})
		}
		delete(k.jobs, key)
	}
}

// startJob creates the worker pods and the launcher pod of an MPIJob.
func (k *FakeKubelet) startJob(ctx context.Context, job *unstructured.Unstructured) error {
	workers, _, _ := unstructured.NestedInt64(job.Object, "spec", "mpiReplicaSpecs", "Worker", "replicas")
	for i := range int(workers) {
		if err := k.createFromTemplate(ctx, job, "Worker", "worker", WorkerPod(job.GetName(), i)); err != nil {
			return err
		}
	}
	return k.createFromTemplate(ctx, job, "Launcher", "launcher", LauncherPod(job.GetName()))
}

func (k *FakeKubelet) createFromTemplate(ctx context.Context, job *unstructured.Unstructured, replica, role, name string) error {
	m, ok, err := unstructured.NestedMap(job.Object, "spec", "mpiReplicaSpecs", replica, "template")
	if err != nil || !ok {
		return errors.Join(fmt.Errorf("MPIJob %s: no %s template", job.GetName(), replica), err) // err is nil when there is none
	}
	var tmpl corev1.PodTemplateSpec
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &tmpl); err != nil {
		return fmt.Errorf("MPIJob %s: %s template: %w", job.GetName(), replica, err)
	}
	pod := &corev1.Pod{ObjectMeta: tmpl.ObjectMeta, Spec: tmpl.Spec}
	pod.Name, pod.Namespace = name, job.GetNamespace()
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	pod.Labels[benchrun.LabelMPIJobName] = job.GetName()
	pod.Labels[benchrun.LabelMPIJobRole] = role
	_, err = k.Client.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{})
	return err
}

// setCondition sets a True condition of the MPIJob, once.
func (k *FakeKubelet) setCondition(ctx context.Context, job *unstructured.Unstructured, typ, reason, msg string) {
	conds, _, _ := unstructured.NestedSlice(job.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == typ {
			return
		}
	}
	conds = append(conds, map[string]any{"type": typ, "status": "True", "reason": reason, "message": msg})
	if err := unstructured.SetNestedSlice(job.Object, conds, "status", "conditions"); err != nil {
		return
	}
	_, _ = k.Dynamic.Resource(benchrun.MPIJobs).Namespace(job.GetNamespace()).UpdateStatus(ctx, job, metav1.UpdateOptions{})
}
