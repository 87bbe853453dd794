package benchrun

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
)

// Cluster is what a run needs of a Kubernetes cluster.
type Cluster interface {
	CreateService(ctx context.Context, svc *corev1.Service) error
	CreatePod(ctx context.Context, pod *corev1.Pod) error
	// CreateClaimTemplate creates a run's ResourceClaimTemplate (its
	// rails delivered by DRA).
	CreateClaimTemplate(ctx context.Context, t *resourceapi.ResourceClaimTemplate) error
	// GetClaim reads a ResourceClaim (a server pod's, for the address its
	// status.devices networkData records).
	GetClaim(ctx context.Context, ns, name string) (*resourceapi.ResourceClaim, error)
	// ListPods lists the pods of namespace ns matching the label selector.
	ListPods(ctx context.Context, ns, selector string) ([]corev1.Pod, error)
	// PodLogs returns at most limit bytes of a container's log.
	PodLogs(ctx context.Context, ns, pod, container string, limit int64) ([]byte, error)
	// CreateMPIJob creates a kubeflow.org/v2beta1 MPIJob. Its error wraps
	// ErrNoMPIOperator when the API server does not serve MPIJobs.
	CreateMPIJob(ctx context.Context, job *unstructured.Unstructured) error
	// GetMPIJob reads an MPIJob (its status has the operator's conditions).
	GetMPIJob(ctx context.Context, ns, name string) (*unstructured.Unstructured, error)
	// Delete deletes a Pod, a Service, a ResourceClaimTemplate or an
	// MPIJob ("Pod", "Service", "ResourceClaimTemplate", "MPIJob"; an
	// MPIJob with its pods); a missing object is no error.
	Delete(ctx context.Context, kind, ns, name string) error
	// Exists reports whether the object is still there (for an MPIJob:
	// it or one of its pods).
	Exists(ctx context.Context, kind, ns, name string) (bool, error)
}

// Kube is a Cluster over a client-go clientset and, for MPIJobs, a
// dynamic client (no MPI Operator Go types are needed). Whether MPIJobs
// are served is asked of Client's discovery.
type Kube struct {
	Client  kubernetes.Interface
	Dynamic dynamic.Interface
}

var _ Cluster = Kube{}

// deleteGrace is the grace period of the pods a run deletes: the
// benchmarks hold no state worth a clean shutdown.
const deleteGrace = 1

// CreateService implements Cluster.
func (k Kube) CreateService(ctx context.Context, svc *corev1.Service) error {
	_, err := k.Client.CoreV1().Services(svc.Namespace).Create(ctx, svc, metav1.CreateOptions{})
	return err
}

// CreatePod implements Cluster.
func (k Kube) CreatePod(ctx context.Context, pod *corev1.Pod) error {
	_, err := k.Client.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{})
	return err
}

// CreateClaimTemplate implements Cluster.
func (k Kube) CreateClaimTemplate(ctx context.Context, t *resourceapi.ResourceClaimTemplate) error {
	_, err := k.Client.ResourceV1().ResourceClaimTemplates(t.Namespace).Create(ctx, t, metav1.CreateOptions{})
	return err
}

// GetClaim implements Cluster.
func (k Kube) GetClaim(ctx context.Context, ns, name string) (*resourceapi.ResourceClaim, error) {
	return k.Client.ResourceV1().ResourceClaims(ns).Get(ctx, name, metav1.GetOptions{})
}

// ListPods implements Cluster.
func (k Kube) ListPods(ctx context.Context, ns, selector string) ([]corev1.Pod, error) {
	l, err := k.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil, err
	}
	return l.Items, nil
}

// PodLogs implements Cluster.
func (k Kube) PodLogs(ctx context.Context, ns, pod, container string, limit int64) ([]byte, error) {
	return k.Client.CoreV1().Pods(ns).GetLogs(pod, &corev1.PodLogOptions{Container: container, LimitBytes: &limit}).DoRaw(ctx)
}

// Delete implements Cluster.
func (k Kube) Delete(ctx context.Context, kind, ns, name string) error {
	var err error
	switch kind {
	case kindPod:
		grace := int64(deleteGrace)
		err = k.Client.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &grace})
	case kindService:
		err = k.Client.CoreV1().Services(ns).Delete(ctx, name, metav1.DeleteOptions{})
	case kindClaimTemplate:
		err = k.Client.ResourceV1().ResourceClaimTemplates(ns).Delete(ctx, name, metav1.DeleteOptions{})
	case kindMPIJob:
		err = k.deleteMPIJob(ctx, ns, name)
	default:
		return fmt.Errorf("delete %s %s/%s: unsupported kind", kind, ns, name)
	}
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// Exists implements Cluster.
func (k Kube) Exists(ctx context.Context, kind, ns, name string) (bool, error) {
	var err error
	switch kind {
	case kindPod:
		_, err = k.Client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	case kindService:
		_, err = k.Client.CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{})
	case kindClaimTemplate:
		_, err = k.Client.ResourceV1().ResourceClaimTemplates(ns).Get(ctx, name, metav1.GetOptions{})
	case kindMPIJob:
		return k.mpiJobExists(ctx, ns, name)
	default:
		return false, fmt.Errorf("get %s %s/%s: unsupported kind", kind, ns, name)
	}
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	return err == nil, err
}
