package railctl

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	schedv1alpha3 "k8s.io/api/scheduling/v1alpha3"
	schedv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"
)

// fakeOwners answers from maps; a missing entry is a missing object.
type fakeOwners struct {
	jobs      map[string]*metav1.OwnerReference
	podGroups map[string]*metav1.OwnerReference
}

var _ Owners = fakeOwners{}

func (f fakeOwners) JobController(_ context.Context, ns, name string) (*metav1.OwnerReference, error) {
	return f.jobs[ns+"/"+name], nil
}

func (f fakeOwners) PodGroup(_ context.Context, ns, name string) (*metav1.OwnerReference, error) {
	return f.podGroups[ns+"/"+name], nil
}

func ctrl(apiVersion, kind, name, uid string) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: name, UID: typesUID(uid), Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}
}

func TestJobOfWalksTheOwnerChain(t *testing.T) {
	t.Parallel()
	jobSet := ctrl("jobset.x-k8s.io/v1alpha2", "JobSet", "llama", "js-uid")
	mpi := ctrl("kubeflow.org/v2beta1", "MPIJob", "bert", "mpi-uid")
	owners := fakeOwners{
		jobs:      map[string]*metav1.OwnerReference{"ml/llama-workers-0": &jobSet, "ml/bert-launcher": &mpi},
		podGroups: map[string]*metav1.OwnerReference{"ml/gang": {APIVersion: "scheduling.k8s.io/v1alpha3", Kind: "PodGroup", Name: "gang", UID: "pg-uid"}},
	}
	plain := func(p *corev1.Pod) *corev1.Pod { return p }
	owned := func(refs ...metav1.OwnerReference) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{OwnerReferences: refs}}
	}
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		want Job
	}{
		{"JobSet's Job", owned(ctrl("batch/v1", "Job", "llama-workers-0", "job-uid")),
			Job{Namespace: "ml", Kind: "JobSet.jobset.x-k8s.io", Name: "llama", Owner: &metav1.OwnerReference{APIVersion: "jobset.x-k8s.io/v1alpha2", Kind: "JobSet", Name: "llama", UID: "js-uid"}}},
		{"MPIJob's launcher Job", owned(ctrl("batch/v1", "Job", "bert-launcher", "l-uid")),
			Job{Namespace: "ml", Kind: "MPIJob.kubeflow.org", Name: "bert", Owner: &metav1.OwnerReference{APIVersion: "kubeflow.org/v2beta1", Kind: "MPIJob", Name: "bert", UID: "mpi-uid"}}},
		{"MPIJob's worker", owned(ctrl("kubeflow.org/v2beta1", "MPIJob", "bert", "mpi-uid")),
			Job{Namespace: "ml", Kind: "MPIJob.kubeflow.org", Name: "bert", Owner: &metav1.OwnerReference{APIVersion: "kubeflow.org/v2beta1", Kind: "MPIJob", Name: "bert", UID: "mpi-uid"}}},
		{"plain Job", owned(metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "not-controller"}, ctrl("batch/v1", "Job", "solo", "solo-uid")),
			Job{Namespace: "ml", Kind: "Job.batch", Name: "solo", Owner: &metav1.OwnerReference{APIVersion: "batch/v1", Kind: "Job", Name: "solo", UID: "solo-uid"}}},
		{"PodGroup", plain(&corev1.Pod{Spec: corev1.PodSpec{SchedulingGroup: &corev1.PodSchedulingGroup{PodGroupName: ptr.To("gang")}}}),
			Job{Namespace: "ml", Kind: "PodGroup.scheduling.k8s.io", Name: "gang", Owner: &metav1.OwnerReference{APIVersion: "scheduling.k8s.io/v1alpha3", Kind: "PodGroup", Name: "gang", UID: "pg-uid"}}},
		{"PodGroup not there yet", plain(&corev1.Pod{Spec: corev1.PodSpec{SchedulingGroup: &corev1.PodSchedulingGroup{PodGroupName: ptr.To("later")}}}),
			Job{Namespace: "ml", Kind: "PodGroup.scheduling.k8s.io", Name: "later"}},
		{"bare pod with railyard.io/job", plain(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{LabelJob: "exp-7"}}}),
			Job{Namespace: "ml", Kind: LabelJob, Name: "exp-7"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := JobOf(context.Background(), "ml", tc.pod, owners)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("job (-want +got):\n%s", diff)
			}
		})
	}
	if _, err := JobOf(context.Background(), "ml", &corev1.Pod{}, owners); !errors.Is(err, ErrNoJob) {
		t.Errorf("a pod with no job: %v, want ErrNoJob", err)
	}
}

func TestTemplateNamesAreValidAndDistinct(t *testing.T) {
	t.Parallel()
	a := Job{Namespace: "ml", Kind: "Job.batch", Name: "llama", Owner: &metav1.OwnerReference{UID: "1"}}
	b := a
	b.Kind = "JobSet.jobset.x-k8s.io"
	again := a
	again.Owner = &metav1.OwnerReference{UID: "2"} // the job recreated under its name
	long := Job{Namespace: "ml", Kind: LabelJob, Name: "Exp_" + strings.Repeat("x", 80)}
	names := map[string]bool{}
	for _, j := range []Job{a, b, again, long} {
		n := TemplateName(j, 1)
		if names[n] {
			t.Errorf("%s: name %s taken by another job", j, n)
		}
		names[n] = true
		if len(n) > 63 || strings.ToLower(n) != n || strings.ContainsAny(n, "_ ") {
			t.Errorf("%s: name %q is no DNS label", j, n)
		}
	}
	if got, want := TemplateName(a, 2), strings.TrimSuffix(TemplateName(a, 1), "1")+"2"; got != want {
		t.Errorf("generation 2: %s, want %s", got, want)
	}
	if !strings.HasPrefix(TemplateName(long, 1), "exp-xxx") {
		t.Errorf("long name %s", TemplateName(long, 1))
	}
}

func TestWantOfReadsAnnotations(t *testing.T) {
	t.Parallel()
	pod := func(ann map[string]string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: ann}}
	}
	got, err := WantOf(pod(nil))
	if err != nil || got != (Want{GPUs: 1}) {
		t.Errorf("defaults: %+v %v, want 1 GPU, pods unsaid", got, err)
	}
	got, err = WantOf(pod(map[string]string{AnnotationGPUs: "4", AnnotationPods: " 16"}))
	if diff := cmp.Diff(Want{GPUs: 4, Pods: 16}, got); diff != "" || err != nil {
		t.Errorf("(-want +got):\n%s %v", diff, err)
	}
	for _, bad := range []string{"0", "-1", "four", "99999"} {
		if _, err := WantOf(pod(map[string]string{AnnotationGPUs: bad})); err == nil {
			t.Errorf("%s=%q accepted", AnnotationGPUs, bad)
		}
	}
}

// TestClientOwnersFindsTheBetaPodGroup: a 1.37 cluster serves PodGroups
// as scheduling.k8s.io/v1beta1 (the alpha only where asked for); the
// template must be owned by the PodGroup found there, and by the alpha's
// where only it has one.
func TestClientOwnersFindsTheBetaPodGroup(t *testing.T) {
	t.Parallel()
	cs := fake.NewClientset(
		&schedv1beta1.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: "gang", UID: "beta-uid"}},
		&schedv1alpha3.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: "old", UID: "alpha-uid"}},
	)
	o := ClientOwners{Client: cs}
	for _, tc := range []struct {
		name string
		want *metav1.OwnerReference
	}{
		{"gang", &metav1.OwnerReference{APIVersion: "scheduling.k8s.io/v1beta1", Kind: "PodGroup", Name: "gang", UID: "beta-uid"}},
		{"old", &metav1.OwnerReference{APIVersion: "scheduling.k8s.io/v1alpha3", Kind: "PodGroup", Name: "old", UID: "alpha-uid"}},
		{"none", nil},
	} {
		got, err := o.PodGroup(context.Background(), "ml", tc.name)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("PodGroup ml/%s (-want +got):\n%s", tc.name, diff)
		}
	}
}
