package railctl

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	admissionv1 "k8s.io/api/admission/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	"github.com/railyard-io/railyard/internal/jobrails"
)

// jobSetCluster is two roce-8gpu-4nic nodes (rails 0,2,4,6 of two GPUs
// each) and a JobSet's Job ml/llama-workers-0.
func jobSetCluster(t *testing.T) *fake.Clientset {
	t.Helper()
	var objs []runtime.Object
	for _, s := range clusterSlices(t, "roce-8gpu-4nic", "node-a", "node-b") {
		objs = append(objs, s)
	}
	objs = append(objs, &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "llama-workers-0", Namespace: "ml", UID: "job-uid",
		OwnerReferences: []metav1.OwnerReference{ctrl("jobset.x-k8s.io/v1alpha2", "JobSet", "llama", "js-uid")}}})
	return fake.NewClientset(objs...)
}

func jobSetPod(name string) *corev1.Pod {
	return &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ml",
			Labels:          map[string]string{LabelRails: RailsSame},
			Annotations:     map[string]string{AnnotationGPUs: "4", AnnotationPods: "2"},
			OwnerReferences: []metav1.OwnerReference{ctrl("batch/v1", "Job", "llama-workers-0", "job-uid")}},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{
				{Name: "worker", Image: "w", Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: resourceQty("2")}}},
				{Name: "sidecar", Image: "s"},
			},
			InitContainers: []corev1.Container{{Name: "init", Image: "i"}},
		},
	}
}

// review posts pod's CREATE to the webhook over HTTP and returns the
// response and the pod with the patch applied.
func review(t *testing.T, url string, op admissionv1.Operation, pod *corev1.Pod) (*admissionv1.AdmissionResponse, *corev1.Pod) {
	t.Helper()
	raw, err := json.Marshal(pod)
	if err != nil {
		t.Fatal(err)
	}
	in := admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{UID: "req-1", Operation: op, Namespace: pod.Namespace,
			Kind:     metav1.GroupVersionKind{Version: "v1", Kind: "Pod"},
			Resource: metav1.GroupVersionResource{Version: "v1", Resource: "pods"}, Object: runtime.RawExtension{Raw: raw}},
	}
	body, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	res, err := http.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var out admissionv1.AdmissionReview
	if err := json.NewDecoder(res.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	if out.APIVersion != "admission.k8s.io/v1" || out.Kind != "AdmissionReview" || out.Response == nil || out.Response.UID != "req-1" {
		t.Fatalf("review answered %+v", out)
	}
	if out.Response.Patch == nil {
		return out.Response, pod
	}
	if pt := out.Response.PatchType; pt == nil || *pt != admissionv1.PatchTypeJSONPatch {
		t.Fatalf("patch type %v", pt)
	}
	patch, err := jsonpatch.DecodePatch(out.Response.Patch)
	if err != nil {
		t.Fatal(err)
	}
	patched, err := patch.Apply(raw)
	if err != nil {
		t.Fatalf("applying %s: %v", out.Response.Patch, err)
	}
	var got corev1.Pod
	if err := json.Unmarshal(patched, &got); err != nil {
		t.Fatal(err)
	}
	return out.Response, &got
}

func TestWebhookGivesEveryPodOfAJobTheJobsTemplate(t *testing.T) {
	t.Parallel()
	cs := jobSetCluster(t)
	srv := httptest.NewServer(&Webhook{Client: cs, Chooser: &Chooser{Client: cs}})
	defer srv.Close()

	var names []string
	for _, p := range []string{"llama-0", "llama-1"} {
		resp, got := review(t, srv.URL, admissionv1.Create, jobSetPod(p))
		if !resp.Allowed {
			t.Fatalf("%s refused: %v", p, resp.Result)
		}
		if len(got.Spec.ResourceClaims) != 1 || got.Spec.ResourceClaims[0].Name != ClaimName || got.Spec.ResourceClaims[0].ResourceClaimTemplateName == nil {
			t.Fatalf("%s: claims %+v", p, got.Spec.ResourceClaims)
		}
		names = append(names, *got.Spec.ResourceClaims[0].ResourceClaimTemplateName)
		for _, c := range got.Spec.Containers {
			if diff := cmp.Diff([]corev1.ResourceClaim{{Name: ClaimName}}, c.Resources.Claims); diff != "" {
				t.Errorf("%s/%s claims (-want +got):\n%s", p, c.Name, diff)
			}
		}
		if got.Spec.Containers[0].Resources.Limits.Cpu().String() != "2" {
			t.Errorf("%s: the worker's limits were lost: %v", p, got.Spec.Containers[0].Resources)
		}
		if len(got.Spec.InitContainers[0].Resources.Claims) != 0 {
			t.Errorf("%s: the init container claims the rails", p)
		}
	}
	if names[0] != names[1] {
		t.Fatalf("the job's pods got templates %v", names)
	}
	list, err := cs.ResourceV1().ResourceClaimTemplates("ml").List(context.Background(), metav1.ListOptions{})
	if err != nil || len(list.Items) != 1 {
		t.Fatalf("templates %v %v, want one", list, err)
	}
	tmpl := list.Items[0]
	want := []metav1.OwnerReference{{APIVersion: "jobset.x-k8s.io/v1alpha2", Kind: "JobSet", Name: "llama", UID: "js-uid"}}
	if diff := cmp.Diff(want, tmpl.OwnerReferences); diff != "" {
		t.Errorf("owner (-want +got):\n%s", diff)
	}
	if got := tmpl.Annotations[jobrails.AnnotationRails]; got != "0,2" {
		t.Errorf("rails %q, want 0,2 (room on both nodes; the lowest)", got)
	}
	if got := len(tmpl.Spec.Spec.Devices.Requests); got != 8 {
		t.Errorf("%d requests, want a GPU and a NIC for each of 4 GPUs", got)
	}
	if tmpl.Name != names[0] || tmpl.Labels[LabelManagedBy] != ManagedBy || tmpl.Annotations[AnnotationGeneration] != "1" || tmpl.Labels[LabelJob] != "llama" {
		t.Errorf("template %s labels %v annotations %v", tmpl.Name, tmpl.Labels, tmpl.Annotations)
	}
	// The same choice as `railyard rails template llama --pods 2 --gpus 4`.
	c := &Chooser{Client: cs}
	choice, toNIC, err := c.Choose(context.Background(), 2, 4)
	if err != nil {
		t.Fatal(err)
	}
	cli, err := jobrails.ClaimTemplate(tmpl.Name, "ml", choice.Set, jobrails.Options{NICRails: toNIC})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(cli.Spec, tmpl.Spec); diff != "" {
		t.Errorf("template spec differs from rails template's (-cli +controller):\n%s", diff)
	}
	events, _ := cs.CoreV1().Events("ml").List(context.Background(), metav1.ListOptions{})
	if len(events.Items) != 1 || events.Items[0].Reason != "RailsChosen" || events.Items[0].InvolvedObject.Kind != "JobSet" {
		t.Errorf("events %+v, want one RailsChosen on the JobSet", events.Items)
	}
}

func TestWebhookLeavesOtherRequestsAlone(t *testing.T) {
	t.Parallel()
	cs := jobSetCluster(t)
	srv := httptest.NewServer(&Webhook{Client: cs, Chooser: &Chooser{Client: cs}})
	defer srv.Close()
	unlabelled := jobSetPod("plain")
	unlabelled.Labels = nil
	claimed := jobSetPod("own-rails")
	claimed.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: ClaimName, ResourceClaimTemplateName: ptr.To("mine")}}
	for name, tc := range map[string]struct {
		op  admissionv1.Operation
		pod *corev1.Pod
	}{
		"update":                   {admissionv1.Update, jobSetPod("x")},
		"unlabelled":               {admissionv1.Create, unlabelled},
		"already claims its rails": {admissionv1.Create, claimed},
	} {
		resp, _ := review(t, srv.URL, tc.op, tc.pod)
		if !resp.Allowed || resp.Patch != nil {
			t.Errorf("%s: allowed %v patch %s, want allowed unchanged", name, resp.Allowed, resp.Patch)
		}
	}
}

func TestWebhookRefusesPodsItCannotServe(t *testing.T) {
	t.Parallel()
	cs := jobSetCluster(t)
	srv := httptest.NewServer(&Webhook{Client: cs, Chooser: &Chooser{Client: cs}})
	defer srv.Close()
	orphan := jobSetPod("orphan")
	orphan.OwnerReferences = nil
	odd := jobSetPod("odd")
	odd.Annotations[AnnotationGPUs] = "3" // rails of 2 GPUs: no whole rails give 3
	bad := jobSetPod("bad")
	bad.Annotations[AnnotationGPUs] = "lots"
	for _, tc := range []struct {
		pod  *corev1.Pod
		want string
	}{
		{orphan, "has no job"},
		{odd, "no node has whole rails of exactly 3 GPUs"},
		{bad, AnnotationGPUs},
	} {
		resp, _ := review(t, srv.URL, admissionv1.Create, tc.pod)
		if resp.Allowed || resp.Result == nil || !strings.Contains(resp.Result.Message, tc.want) {
			t.Errorf("%s: allowed %v result %+v, want refused with %q", tc.pod.Name, resp.Allowed, resp.Result, tc.want)
		}
	}
	list, _ := cs.ResourceV1().ResourceClaimTemplates("ml").List(context.Background(), metav1.ListOptions{})
	if len(list.Items) != 0 {
		t.Errorf("%d templates made for refused pods", len(list.Items))
	}
}

func TestWebhookLetsAJobShortOfRoomWaitWithAWarning(t *testing.T) {
	t.Parallel()
	cs := jobSetCluster(t)
	srv := httptest.NewServer(&Webhook{Client: cs, Chooser: &Chooser{Client: cs}})
	defer srv.Close()
	pod := jobSetPod("big")
	pod.Annotations[AnnotationPods] = "3" // two nodes
	resp, got := review(t, srv.URL, admissionv1.Create, pod)
	if !resp.Allowed || len(got.Spec.ResourceClaims) != 1 {
		t.Fatalf("allowed %v claims %v", resp.Allowed, got.Spec.ResourceClaims)
	}
	if len(resp.Warnings) != 1 || !strings.Contains(resp.Warnings[0], "room on 2 nodes") {
		t.Errorf("warnings %q", resp.Warnings)
	}
}

func TestWebhookAnswersOnlyAdmissionReviews(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(&Webhook{})
	defer srv.Close()
	res, err := http.Post(srv.URL, "application/json", strings.NewReader(`{"kind":"AdmissionReview"}`))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusBadRequest {
		t.Errorf("a review without a request: %s", res.Status)
	}
	res, err = http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET: %s", res.Status)
	}
}

func TestWebhookDryRunMakesNothing(t *testing.T) {
	t.Parallel()
	cs := jobSetCluster(t)
	w := &Webhook{Client: cs, Chooser: &Chooser{Client: cs}}
	raw, err := json.Marshal(jobSetPod("dry"))
	if err != nil {
		t.Fatal(err)
	}
	resp := w.Admit(context.Background(), &admissionv1.AdmissionRequest{Operation: admissionv1.Create, Namespace: "ml", DryRun: ptr.To(true),
		Resource: metav1.GroupVersionResource{Version: "v1", Resource: "pods"}, Object: runtime.RawExtension{Raw: raw}})
	if !resp.Allowed || resp.Patch == nil {
		t.Fatalf("dry run: allowed %v patch %s", resp.Allowed, resp.Patch)
	}
	list, _ := cs.ResourceV1().ResourceClaimTemplates("ml").List(context.Background(), metav1.ListOptions{})
	events, _ := cs.CoreV1().Events("ml").List(context.Background(), metav1.ListOptions{})
	if len(list.Items)+len(events.Items) != 0 {
		t.Errorf("a dry run made %d templates and %d events", len(list.Items), len(events.Items))
	}
}
