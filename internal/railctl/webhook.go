package railctl

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/railyard-io/railyard/internal/jobrails"
)

// maxReview bounds an AdmissionReview's body (a pod is at most etcd's
// 1.5 MiB object, twice over for old and new).
const maxReview = 8 << 20

// Webhook is the mutating admission webhook: at a labelled pod's CREATE
// it finds or makes its job's template and patches the pod to claim it.
type Webhook struct {
	Client  kubernetes.Interface
	Chooser *Chooser
	// Owners looks up Jobs' controllers and PodGroups (default: Client).
	Owners Owners
	// Now is the clock (default time.Now).
	Now func() time.Time

	// mu serializes choices: the pods of a job admitted together find
	// the template the first one made.
	mu sync.Mutex
}

// ServeHTTP answers an AdmissionReview v1.
func (w *Webhook) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(rw, "POST an AdmissionReview", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxReview+1))
	if err != nil || len(body) > maxReview {
		http.Error(rw, "reading the AdmissionReview failed or it is too large", http.StatusBadRequest)
		return
	}
	var review admissionv1.AdmissionReview
	if err := json.Unmarshal(body, &review); err != nil || review.Request == nil {
		http.Error(rw, fmt.Sprintf("want an AdmissionReview with a request: %v", err), http.StatusBadRequest)
		return
	}
	resp := w.Admit(r.Context(), review.Request)
	resp.UID = review.Request.UID
	out := admissionv1.AdmissionReview{TypeMeta: review.TypeMeta, Response: resp}
	if out.APIVersion == "" {
		out.APIVersion, out.Kind = admissionv1.SchemeGroupVersion.String(), "AdmissionReview"
	}
	b, err := json.Marshal(out)
	if err != nil {
		http.Error(rw, err.Error(), http.StatusInternalServerError)
		return
	}
	rw.Header().Set("Content-Type", "application/json")
	_, _ = rw.Write(b)
}

// Admit answers one request: pods labelled railyard.io/rails=same, at
// CREATE, get their job's claim; anything else passes unchanged. A pod
// with no job, bad annotations, or a job that no rail set can ever take
// (no node has whole rails of its GPUs) is refused with the reason; one
// whose job's set is short of room is let through with a warning (it
// waits, and the controller may re-choose).
func (w *Webhook) Admit(ctx context.Context, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	if req.Operation != admissionv1.Create || req.Resource.Group != "" || req.Resource.Resource != "pods" || req.SubResource != "" {
		return &admissionv1.AdmissionResponse{Allowed: true}
	}
	var pod corev1.Pod
	if err := json.Unmarshal(req.Object.Raw, &pod); err != nil {
		return deny(http.StatusBadRequest, fmt.Errorf("decoding the pod: %w", err))
	}
	if pod.Labels[LabelRails] != RailsSame {
		return &admissionv1.AdmissionResponse{Allowed: true}
	}
	ns := req.Namespace
	if ns == "" {
		ns = pod.Namespace
	}
	owners := w.Owners
	if owners == nil {
		owners = ClientOwners{Client: w.Client}
	}
	job, err := JobOf(ctx, ns, &pod, owners)
	if err != nil {
		return deny(http.StatusBadRequest, err)
	}
	want, err := WantOf(&pod)
	if err != nil {
		return deny(http.StatusBadRequest, err)
	}
	var t *resourceapi.ResourceClaimTemplate
	var warning string
	if req.DryRun != nil && *req.DryRun {
		t, err = w.dryRunTemplate(ctx, job)
	} else {
		t, warning, err = w.templateFor(ctx, job, want)
	}
	if err != nil {
		return deny(http.StatusInternalServerError, fmt.Errorf("rails for %s: %w", job, err))
	}
	ops, err := PodPatch(&pod, t.Name)
	if err != nil {
		return deny(http.StatusInternalServerError, err)
	}
	resp := &admissionv1.AdmissionResponse{Allowed: true}
	if warning != "" {
		resp.Warnings = []string{warning}
	}
	if len(ops) > 0 {
		b, err := json.Marshal(ops)
		if err != nil {
			return deny(http.StatusInternalServerError, err)
		}
		pt := admissionv1.PatchTypeJSONPatch
		resp.Patch, resp.PatchType = b, &pt
	}
	return resp
}

// templateFor is the job's current template, made at its first pod:
// jobrails.Choose for max(want.Pods, 1) pods of want.GPUs GPUs, then
// Chooser.Template of generation 1. A template made by another replica
// or an earlier call meanwhile (AlreadyExists) is read back.
func (w *Webhook) templateFor(ctx context.Context, job Job, want Want) (*resourceapi.ResourceClaimTemplate, string, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	ts, err := jobTemplates(ctx, w.Client, job.Namespace, job.ID())
	if err != nil {
		return nil, "", err
	}
	if t := current(ts); t != nil {
		return t, "", nil
	}
	pods := max(want.Pods, 1)
	choice, toNIC, err := w.Chooser.Choose(ctx, pods, want.GPUs)
	warning := ""
	if err != nil {
		if !errors.Is(err, jobrails.ErrNoRoom) || choice.Set == nil {
			return nil, "", err
		}
		warning = fmt.Sprintf("railyard: %v; the job's pods wait for room on rails %s", err, choice.Set)
	}
	t, err := w.Chooser.Template(job, 1, choice.Set, toNIC)
	if err != nil {
		return nil, "", err
	}
	created, err := w.Client.ResourceV1().ResourceClaimTemplates(job.Namespace).Create(ctx, t, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		created, err = w.Client.ResourceV1().ResourceClaimTemplates(job.Namespace).Get(ctx, t.Name, metav1.GetOptions{})
		if err != nil {
			return nil, "", fmt.Errorf("reading template %s/%s: %w", job.Namespace, t.Name, err)
		}
		return created, "", nil
	}
	if err != nil {
		return nil, "", fmt.Errorf("creating template %s/%s: %w", job.Namespace, t.Name, err)
	}
	msg := fmt.Sprintf("rails %s for %d pods of %d GPUs: room for a pod on %d nodes; template %s", choice.Set, pods, want.GPUs, len(choice.Nodes), created.Name)
	typ := corev1.EventTypeNormal
	if warning != "" {
		msg, typ = warning+"; template "+created.Name, corev1.EventTypeWarning
	}
	// The event is a courtesy: the pod is admitted without it.
	_ = event(ctx, w.Client, w.now(), job, created, typ, "RailsChosen", msg)
	return created, warning, nil
}

// dryRunTemplate is the template a dry run's pod would claim, made by
// nothing (sideEffects: NoneOnDryRun): the job's current one, else the
// name its first would have.
func (w *Webhook) dryRunTemplate(ctx context.Context, job Job) (*resourceapi.ResourceClaimTemplate, error) {
	ts, err := jobTemplates(ctx, w.Client, job.Namespace, job.ID())
	if err != nil {
		return nil, err
	}
	if t := current(ts); t != nil {
		return t, nil
	}
	return &resourceapi.ResourceClaimTemplate{ObjectMeta: metav1.ObjectMeta{Name: TemplateName(job, 1), Namespace: job.Namespace}}, nil
}

func (w *Webhook) now() time.Time {
	if w.Now != nil {
		return w.Now()
	}
	return time.Now()
}

func deny(code int32, err error) *admissionv1.AdmissionResponse {
	return &admissionv1.AdmissionResponse{Allowed: false, Result: &metav1.Status{
		Status: metav1.StatusFailure, Code: code, Message: err.Error()}}
}

// ClientOwners reads Jobs and PodGroups from the API server.
type ClientOwners struct{ Client kubernetes.Interface }

var _ Owners = ClientOwners{}

// JobController is the controller of batch Job namespace/name.
func (o ClientOwners) JobController(ctx context.Context, namespace, name string) (*metav1.OwnerReference, error) {
	j, err := o.Client.BatchV1().Jobs(namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return metav1.GetControllerOf(j), nil
}

// PodGroup references PodGroup namespace/name: scheduling.k8s.io/v1beta1
// (Kubernetes 1.37's group scheduling, the API a 1.37 cluster serves when
// its --runtime-config enables it), else v1alpha3 (1.36, or a 1.37 cluster
// serving only the alpha); nil when neither has it (not there yet, or the
// API is not served: both answer NotFound).
func (o ClientOwners) PodGroup(ctx context.Context, namespace, name string) (*metav1.OwnerReference, error) {
	g, err := o.Client.SchedulingV1beta1().PodGroups(namespace).Get(ctx, name, metav1.GetOptions{})
	if err == nil {
		return &metav1.OwnerReference{APIVersion: "scheduling.k8s.io/v1beta1", Kind: "PodGroup", Name: g.Name, UID: g.UID}, nil
	}
	if !apierrors.IsNotFound(err) {
		return nil, err
	}
	a, err := o.Client.SchedulingV1alpha3().PodGroups(namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &metav1.OwnerReference{APIVersion: "scheduling.k8s.io/v1alpha3", Kind: "PodGroup", Name: a.Name, UID: a.UID}, nil
}
