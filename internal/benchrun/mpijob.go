package benchrun

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/railyard-io/railyard/internal/benchplan"
)

// The MPI Operator's API (kubeflow.org/v2beta1), as far as bench run needs
// it. The operator runs an MPIJob's launcher as a batch Job named
// <mpijob>-launcher and its workers as pods <mpijob>-worker-<i>, every pod
// labelled with the MPIJob's name and its role; it reports the job's end
// as a Succeeded or Failed condition in the MPIJob's status.
const (
	kindMPIJob = benchplan.MPIJobKind
	// LabelMPIJobName is on every pod of an MPIJob: the MPIJob's name.
	LabelMPIJobName = "training.kubeflow.org/job-name"
	// LabelMPIJobRole is on every pod of an MPIJob: launcher or worker.
	LabelMPIJobRole = "training.kubeflow.org/job-role"
	roleLauncher    = "launcher"
	roleWorker      = "worker"
	// labelComponent names an object's part of the plan (bench plan sets
	// it to nccl, osu, horovod on its MPIJobs): an MPIJob's test when it
	// has no benchplan.LabelTest.
	labelComponent = "app.kubernetes.io/component"
)

// MPIJobs is the MPIJob resource.
var MPIJobs = schema.GroupVersionResource{Group: "kubeflow.org", Version: "v2beta1", Resource: "mpijobs"}

// ErrNoMPIOperator is wrapped by the error of an MPIJob the cluster does
// not serve: the MPI Operator (its CRD) is not installed.
var ErrNoMPIOperator = errors.New("the cluster does not serve MPIJobs (kubeflow.org/v2beta1): install the MPI Operator (github.com/kubeflow/mpi-operator, v0.4 or later) to run nccl-tests, OSU and Horovod")

// CreateMPIJob implements Cluster: it asks discovery first whether
// MPIJobs are served, so a missing operator is told apart from a refused
// object.
func (k Kube) CreateMPIJob(ctx context.Context, job *unstructured.Unstructured) error {
	if err := k.servesMPIJobs(); err != nil {
		return fmt.Errorf("MPIJob %s/%s: %w", job.GetNamespace(), job.GetName(), err)
	}
	_, err := k.Dynamic.Resource(MPIJobs).Namespace(job.GetNamespace()).Create(ctx, job, metav1.CreateOptions{})
	return err
}

func (k Kube) servesMPIJobs() error {
	if k.Dynamic == nil {
		return errors.New("no dynamic client to create MPIJobs with")
	}
	list, err := k.Client.Discovery().ServerResourcesForGroupVersion(MPIJobs.GroupVersion().String())
	if apierrors.IsNotFound(err) {
		return ErrNoMPIOperator
	}
	if err != nil {
		return fmt.Errorf("discovery of %s: %w", MPIJobs.GroupVersion(), err)
	}
	for _, r := range list.APIResources {
		if r.Name == MPIJobs.Resource {
			return nil
		}
	}
	return ErrNoMPIOperator
}

// GetMPIJob implements Cluster.
func (k Kube) GetMPIJob(ctx context.Context, ns, name string) (*unstructured.Unstructured, error) {
	if k.Dynamic == nil {
		return nil, errors.New("no dynamic client to read MPIJobs with")
	}
	return k.Dynamic.Resource(MPIJobs).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
}

// deleteMPIJob deletes an MPIJob in the background: the garbage collector
// deletes its launcher Job, workers and their pods, and mpiJobExists
// follows the pods until they are gone. (A foreground deletion would
// leave the MPIJob itself in place for ever on a cluster without a
// garbage collector.)
func (k Kube) deleteMPIJob(ctx context.Context, ns, name string) error {
	if k.Dynamic == nil {
		return errors.New("no dynamic client to delete MPIJobs with")
	}
	bg := metav1.DeletePropagationBackground
	return k.Dynamic.Resource(MPIJobs).Namespace(ns).Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: &bg})
}

// mpiJobExists reports whether the MPIJob or one of its pods is there.
func (k Kube) mpiJobExists(ctx context.Context, ns, name string) (bool, error) {
	if k.Dynamic == nil {
		return false, errors.New("no dynamic client to read MPIJobs with")
	}
	_, err := k.Dynamic.Resource(MPIJobs).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	if err == nil || !apierrors.IsNotFound(err) {
		return err == nil, err
	}
	pods, err := k.ListPods(ctx, ns, mpiJobSelector(name))
	return len(pods) > 0, err
}

func mpiJobSelector(job string) string {
	return LabelMPIJobName + "=" + job
}

// checkMPIJob checks what bench run needs of an MPIJob of a plan: the
// v2beta1 API, a name and a launcher.
func checkMPIJob(u *unstructured.Unstructured) error {
	if u.GetAPIVersion() != benchplan.MPIJobAPIVersion {
		return fmt.Errorf("MPIJob %s: apiVersion %q: bench run creates %s MPIJobs", u.GetName(), u.GetAPIVersion(), benchplan.MPIJobAPIVersion)
	}
	if u.GetName() == "" {
		return errors.New("MPIJob without a name")
	}
	if _, ok, err := unstructured.NestedMap(u.Object, "spec", "mpiReplicaSpecs", "Launcher"); !ok || err != nil {
		return fmt.Errorf("MPIJob %s: no spec.mpiReplicaSpecs.Launcher", u.GetName())
	}
	return nil
}

// mpiWorkers is the MPIJob's number of workers (spec), 0 when unknown.
func mpiWorkers(u *unstructured.Unstructured) int {
	n, _, _ := unstructured.NestedInt64(u.Object, "spec", "mpiReplicaSpecs", "Worker", "replicas")
	return int(max(n, 0))
}

// jobCondition is one of an MPIJob's status conditions.
type jobCondition struct{ Type, Status, Reason, Message string }

func (c jobCondition) String() string {
	s := c.Type + "=" + c.Status
	if c.Reason != "" {
		s += " (" + c.Reason
		if c.Message != "" {
			s += ": " + c.Message
		}
		s += ")"
	}
	return s
}

// conditions reads status.conditions of an MPIJob; malformed entries are
// skipped.
func conditions(u *unstructured.Unstructured) []jobCondition {
	if u == nil {
		return nil
	}
	list, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	var out []jobCondition
	for _, item := range list {
		m, ok := item.(map[string]any)
		if !ok {
			continue
		}
		str := func(k string) string { s, _ := m[k].(string); return s }
		out = append(out, jobCondition{Type: str("type"), Status: str("status"), Reason: str("reason"), Message: str("message")})
	}
	return out
}

// trueCondition returns the condition of type t when it is True.
func trueCondition(u *unstructured.Unstructured, t string) (jobCondition, bool) {
	for _, c := range conditions(u) {
		if c.Type == t && c.Status == "True" {
			return c, true
		}
	}
	return jobCondition{}, false
}
