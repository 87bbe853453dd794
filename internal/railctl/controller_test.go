package railctl

import (
	"context"
	"crypto/x509"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	admregv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/railyard-io/railyard/internal/jobrails"
)

var t0 = time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC)

func pendingPod(name string, unschedulableSince time.Time, owned bool) *corev1.Pod {
	p := jobSetPod(name)
	p.UID = typesUID(name + "-uid")
	if !owned {
		p.OwnerReferences = nil
		p.Labels[LabelJob] = "exp"
	}
	p.Status = corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{
		Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
		Message: "0/2 nodes are available: cannot allocate all claims", LastTransitionTime: metav1.NewTime(unschedulableSince)}}}
	return p
}

func TestRechooseOnlyUnschedulableLongEnoughAndNoneStarted(t *testing.T) {
	t.Parallel()
	after := 2 * time.Minute
	now := t0.Add(10 * time.Minute)
	bound := pendingPod("b", t0, true)
	bound.Spec.NodeName = "node-a"
	running := pendingPod("r", t0, true)
	running.Status.Phase = corev1.PodRunning
	for _, tc := range []struct {
		name string
		pods []*corev1.Pod
		made time.Time
		want bool
	}{
		{"unschedulable 3m", []*corev1.Pod{pendingPod("a", now.Add(-3*time.Minute), true)}, t0, true},
		{"unschedulable exactly 2m", []*corev1.Pod{pendingPod("a", now.Add(-after), true)}, t0, true},
		{"unschedulable 1m59s", []*corev1.Pod{pendingPod("a", now.Add(-after+time.Second), true)}, t0, false},
		{"template younger than 2m", []*corev1.Pod{pendingPod("a", t0, true)}, now.Add(-time.Minute), false},
		{"a pod bound", []*corev1.Pod{pendingPod("a", t0, true), bound}, t0, false},
		{"a pod running", []*corev1.Pod{pendingPod("a", t0, true), running}, t0, false},
		{"pending but not unschedulable", []*corev1.Pod{{Status: corev1.PodStatus{Phase: corev1.PodPending}}}, t0, false},
		{"no pods", nil, t0, false},
	} {
		got, why := Rechoose(tc.pods, tc.made, now, after)
		if got != tc.want {
			t.Errorf("%s: %v (%s), want %v", tc.name, got, why, tc.want)
		}
		if got && !strings.Contains(why, "unschedulable for") {
			t.Errorf("%s: reason %q", tc.name, why)
		}
	}
}

// stuckJob is a JobSet's job whose template (generation 1, made at t0)
// pins rails 4,6 (chosen when 0,2 were busy), two pods pending on it
// since t0, and a fresh cluster where rails 0,2 have room.
func stuckJob(t *testing.T, pods ...*corev1.Pod) (*fake.Clientset, *resourceapi.ResourceClaimTemplate) {
	t.Helper()
	cs := jobSetCluster(t)
	ch := &Chooser{Client: cs}
	job := Job{Namespace: "ml", Kind: "JobSet.jobset.x-k8s.io", Name: "llama",
		Owner: &metav1.OwnerReference{APIVersion: "jobset.x-k8s.io/v1alpha2", Kind: "JobSet", Name: "llama", UID: "js-uid"}}
	choice, _, err := ch.Choose(context.Background(), 2, 4)
	if err != nil {
		t.Fatal(err)
	}
	set := jobrails.Set{choice.Set[0], choice.Set[1]}
	set[0].Rail, set[1].Rail = 4, 6
	tmpl, err := ch.Template(job, 1, set, nil)
	if err != nil {
		t.Fatal(err)
	}
	tmpl.CreationTimestamp = metav1.NewTime(t0)
	objs := []runtime.Object{tmpl}
	for _, p := range pods {
		p.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: ClaimName, ResourceClaimTemplateName: &tmpl.Name}}
		objs = append(objs, p)
	}
	for _, o := range objs {
		if err := cs.Tracker().Add(o); err != nil {
			t.Fatal(err)
		}
	}
	return cs, tmpl
}

func templates(t *testing.T, cs *fake.Clientset) map[string]string {
	t.Helper()
	list, err := cs.ResourceV1().ResourceClaimTemplates("").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, tm := range list.Items {
		out[tm.Annotations[AnnotationGeneration]] = tm.Annotations[jobrails.AnnotationRails]
	}
	return out
}

func TestControllerRechoosesAStuckJobAfterTheBoundOnly(t *testing.T) {
	t.Parallel()
	owned, bare := pendingPod("llama-0", t0, true), pendingPod("exp-0", t0, false)
	cs, old := stuckJob(t, owned, bare)
	now := t0.Add(time.Minute)
	c := &Controller{Client: cs, Chooser: &Chooser{Client: cs}, RechooseAfter: 2 * time.Minute, Grace: 2 * time.Minute, Now: func() time.Time { return now }}

	if err := c.Reconcile(context.Background()); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]string{"1": "4,6"}, templates(t, cs)); diff != "" {
		t.Fatalf("after 1m (-want +got):\n%s", diff)
	}

	now = t0.Add(2 * time.Minute)
	if err := c.Reconcile(context.Background()); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]string{"1": "4,6", "2": "0,2"}, templates(t, cs)); diff != "" {
		t.Fatalf("after 2m (-want +got):\n%s", diff)
	}
	pods, _ := cs.CoreV1().Pods("ml").List(context.Background(), metav1.ListOptions{})
	var left []string
	for _, p := range pods.Items {
		left = append(left, p.Name)
	}
	if diff := cmp.Diff([]string{"exp-0"}, left); diff != "" {
		t.Errorf("pods left (-want +got): the owned pending pod is deleted, the bare one kept\n%s", diff)
	}
	events, _ := cs.CoreV1().Events("ml").List(context.Background(), metav1.ListOptions{})
	if len(events.Items) != 1 || events.Items[0].Reason != "RailsRechosen" || events.Items[0].InvolvedObject.Name != "llama" ||
		!strings.Contains(events.Items[0].Message, "on rails 4,6; rails 0,2 have room") || !strings.Contains(events.Items[0].Message, old.Name) {
		t.Errorf("events %+v", events.Items)
	}

	// The old template stays while the bare pod claims it, and goes once
	// it is gone; the new one (owned by the JobSet) stays.
	now = t0.Add(10 * time.Minute)
	if err := c.Reconcile(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, ok := templates(t, cs)["1"]; !ok {
		t.Fatal("the old template went while a pod claims it")
	}
	if err := cs.CoreV1().Pods("ml").Delete(context.Background(), "exp-0", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := c.Reconcile(context.Background()); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]string{"2": "0,2"}, templates(t, cs)); diff != "" {
		t.Errorf("after the last pod of the old template (-want +got):\n%s", diff)
	}
}

func TestControllerDoesNotRechooseOnceAPodIsBound(t *testing.T) {
	t.Parallel()
	bound := pendingPod("llama-1", t0, true)
	bound.Spec.NodeName = "node-a"
	cs, _ := stuckJob(t, pendingPod("llama-0", t0, true), bound)
	c := &Controller{Client: cs, Chooser: &Chooser{Client: cs}, RechooseAfter: 2 * time.Minute, Now: func() time.Time { return t0.Add(time.Hour) }}
	if err := c.Reconcile(context.Background()); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]string{"1": "4,6"}, templates(t, cs)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestControllerDeletesALabelJobsTemplateWhenNoPodIsLeft(t *testing.T) {
	t.Parallel()
	cs := jobSetCluster(t)
	ch := &Chooser{Client: cs}
	choice, _, err := ch.Choose(context.Background(), 1, 2)
	if err != nil {
		t.Fatal(err)
	}
	tmpl, err := ch.Template(Job{Namespace: "ml", Kind: LabelJob, Name: "exp"}, 1, choice.Set, nil)
	if err != nil {
		t.Fatal(err)
	}
	tmpl.CreationTimestamp = metav1.NewTime(t0)
	if err := cs.Tracker().Add(tmpl); err != nil {
		t.Fatal(err)
	}
	now := t0.Add(time.Minute)
	c := &Controller{Client: cs, Chooser: ch, RechooseAfter: 2 * time.Minute, Grace: 2 * time.Minute, Now: func() time.Time { return now }}
	if err := c.Reconcile(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(templates(t, cs)) != 1 {
		t.Fatal("a template younger than the grace went (its first pod may not exist yet)")
	}
	now = t0.Add(3 * time.Minute)
	if err := c.Reconcile(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := templates(t, cs); len(got) != 0 {
		t.Errorf("templates %v: want the unowned, unused template gone", got)
	}
}

func TestCertsServeTheServiceNamesAndCABundleIsPatched(t *testing.T) {
	t.Parallel()
	names := ServiceDNSNames("railyard-rails-controller", "railyard-system")
	certs, err := NewCerts(time.Now(), names)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(certs.CAPEM) {
		t.Fatal("CA PEM unreadable")
	}
	leaf, err := x509.ParseCertificate(certs.Serving.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	if _, err := leaf.Verify(x509.VerifyOptions{DNSName: "railyard-rails-controller.railyard-system.svc", Roots: pool}); err != nil {
		t.Errorf("the API server would refuse the serving certificate: %v", err)
	}

	cfg := &admregv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "railyard-rails", ResourceVersion: "7"},
		Webhooks: []admregv1.MutatingWebhook{{Name: "rails.railyard.io", ClientConfig: admregv1.WebhookClientConfig{CABundle: []byte("old")}}}}
	cs := fake.NewClientset(cfg)
	patched, err := EnsureCABundle(context.Background(), cs, "railyard-rails", certs.CAPEM)
	if err != nil || !patched {
		t.Fatalf("patched %v %v", patched, err)
	}
	got, err := cs.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(context.Background(), "railyard-rails", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if string(got.Webhooks[0].ClientConfig.CABundle) != string(certs.CAPEM) {
		t.Errorf("caBundle %q", got.Webhooks[0].ClientConfig.CABundle)
	}
	if patched, err := EnsureCABundle(context.Background(), cs, "railyard-rails", certs.CAPEM); err != nil || patched {
		t.Errorf("second call patched %v %v, want nothing to do", patched, err)
	}
}

func TestLeaderElectionIsAConfiguredLease(t *testing.T) {
	t.Parallel()
	cs := fake.NewClientset()
	le, err := LeaderElection(Config{Client: cs, Namespace: "railyard-system", LeaseName: "railyard-rails-controller", Identity: "pod-1"}, func(context.Context) {})
	if err != nil || le == nil {
		t.Fatalf("%v %v", le, err)
	}
	if le.GetLeader() != "" {
		t.Errorf("leader %q before running", le.GetLeader())
	}
	if _, err := LeaderElection(Config{Client: cs, Namespace: "railyard-system", LeaseName: "x"}, func(context.Context) {}); err == nil {
		t.Error("no identity accepted")
	}
}
