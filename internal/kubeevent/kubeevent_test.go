package kubeevent

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

var t0 = time.Date(2026, 12, 7, 12, 0, 0, 123, time.UTC)

func pod(name string) corev1.ObjectReference {
	return corev1.ObjectReference{APIVersion: "v1", Kind: "Pod", Namespace: "ml", Name: name, UID: "uid-1"}
}

// events lists the Events of namespace ns in cs.
func events(t *testing.T, cs *fake.Clientset, ns string) []corev1.Event {
	t.Helper()
	l, err := cs.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return l.Items
}

// TestPostIsClientGoRecordersEventFakeClientset: the Event created is
// the one client-go's recorder makes (makeEvent, generateEvent): named
// "<object>.<unixnano hex>" in the object's namespace, with the source
// as the reporting controller and instance, count 1 and both timestamps
// the time given.
func TestPostIsClientGoRecordersEventFakeClientset(t *testing.T) {
	t.Parallel()
	cs := fake.NewClientset()
	src := corev1.EventSource{Component: "railyard-agent", Host: "gpu-1"}
	if err := Post(context.Background(), cs, Event{Object: pod("trainer-0"), Type: corev1.EventTypeWarning,
		Reason: "RoCEGIDIndexMismatch", Message: "indexes differ", Source: src, Time: t0}); err != nil {
		t.Fatal(err)
	}
	got := events(t, cs, "ml")
	for i := range got {
		// What the fake clientset's tracker adds, not Post.
		got[i].TypeMeta, got[i].ManagedFields = metav1.TypeMeta{}, nil
	}
	now := metav1.NewTime(t0)
	want := []corev1.Event{{
		// 0x18eef6ed338d807b is t0's UnixNano.
		ObjectMeta:     metav1.ObjectMeta{Name: "trainer-0.18eef6ed338d807b", Namespace: "ml"},
		InvolvedObject: pod("trainer-0"), Reason: "RoCEGIDIndexMismatch", Message: "indexes differ", Type: corev1.EventTypeWarning,
		FirstTimestamp: now, LastTimestamp: now, Count: 1, Source: src,
		ReportingController: "railyard-agent", ReportingInstance: "gpu-1",
	}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

// TestPostNameFallsBackToAUUIDFakeClientset: an object whose name with
// the time is no DNS subdomain (over 253 characters) gets a UUID, as
// client-go's GenerateEventName gives it; a cluster-scoped object's
// Event goes to "default", as makeEvent puts it.
func TestPostNameFallsBackToAUUIDFakeClientset(t *testing.T) {
	t.Parallel()
	cs := fake.NewClientset()
	long := strings.Repeat("a", 250)
	if err := Post(context.Background(), cs, Event{Object: pod(long), Type: corev1.EventTypeNormal, Reason: "R", Time: t0}); err != nil {
		t.Fatal(err)
	}
	node := corev1.ObjectReference{APIVersion: "v1", Kind: "Node", Name: "gpu-1"}
	if err := Post(context.Background(), cs, Event{Object: node, Type: corev1.EventTypeNormal, Reason: "R", Time: t0}); err != nil {
		t.Fatal(err)
	}
	ml := events(t, cs, "ml")
	if len(ml) != 1 {
		t.Fatalf("%d events in ml, want 1", len(ml))
	}
	if _, err := uuid.Parse(ml[0].Name); err != nil {
		t.Errorf("event of a 250-character name is named %q, want a UUID: %v", ml[0].Name, err)
	}
	def := events(t, cs, metav1.NamespaceDefault)
	if len(def) != 1 || def[0].Name != "gpu-1.18eef6ed338d807b" || def[0].InvolvedObject != node {
		t.Errorf("the Node's events in default: %+v", def)
	}
}

// TestPostTruncatesTheMessageFakeClientset: a message over MaxMessage
// bytes is created cut to the limit, ending in " ..."; one of exactly
// MaxMessage bytes is kept whole.
func TestPostTruncatesTheMessageFakeClientset(t *testing.T) {
	t.Parallel()
	cs := fake.NewClientset()
	fits := strings.Repeat("f", MaxMessage)
	long := strings.Repeat("x", 3*MaxMessage)
	for i, msg := range []string{fits, long} {
		if err := Post(context.Background(), cs, Event{Object: pod("p"), Type: corev1.EventTypeNormal, Reason: "R",
			Message: msg, Time: t0.Add(time.Duration(i))}); err != nil {
			t.Fatal(err)
		}
	}
	got := map[string]string{}
	for _, e := range events(t, cs, "ml") {
		got[e.Message[:1]] = e.Message
	}
	if got["f"] != fits {
		t.Errorf("a message of MaxMessage bytes was changed to %d bytes", len(got["f"]))
	}
	if want := strings.Repeat("x", MaxMessage-4) + " ..."; got["x"] != want {
		t.Errorf("a message of %d bytes was created as %d bytes (%q...), want %d ending in \" ...\"",
			len(long), len(got["x"]), got["x"][:min(len(got["x"]), 8)], len(want))
	}
}

// TestTruncateCutsOnACharacterBoundary: a multi-byte character across
// the cut is left out whole, never split into invalid UTF-8.
func TestTruncateCutsOnACharacterBoundary(t *testing.T) {
	t.Parallel()
	for _, pad := range []int{0, 1, 2, 3} {
		// "€" is 3 bytes; pad moves it across the cut.
		msg := strings.Repeat("a", MaxMessage-len(truncated)-pad) + strings.Repeat("€", 400)
		got := Truncate(msg)
		if len(got) > MaxMessage || !strings.HasSuffix(got, truncated) || !utf8.ValidString(got) {
			t.Errorf("pad %d: %d bytes, valid UTF-8 %v, suffix %q", pad, len(got), utf8.ValidString(got), got[len(got)-6:])
		}
		if !strings.HasPrefix(msg, strings.TrimSuffix(got, truncated)) {
			t.Errorf("pad %d: the kept text is not the message's start", pad)
		}
		if len(got) < MaxMessage-3 {
			t.Errorf("pad %d: cut to %d bytes, more than one character short of %d", pad, len(got), MaxMessage)
		}
	}
}

// TestPostWrapsTheAPIErrorFakeClientset: the Create's error is wrapped
// (apierrors sees through it) and the message names the reason and the
// object; a second Event on the same object at the same nanosecond is
// the API server's AlreadyExists, as for client-go's recorder.
func TestPostWrapsTheAPIErrorFakeClientset(t *testing.T) {
	t.Parallel()
	denied := fake.NewClientset()
	forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: "events"}, "", errors.New("no RBAC"))
	denied.PrependReactor("create", "events", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, forbidden
	})
	err := Post(context.Background(), denied, Event{Object: pod("trainer-0"), Type: corev1.EventTypeWarning, Reason: "RoCEGIDIndexMismatch", Time: t0})
	if !errors.Is(err, forbidden) || !apierrors.IsForbidden(err) {
		t.Errorf("error %v does not wrap the API's Forbidden", err)
	}
	if err != nil && !strings.Contains(err.Error(), "RoCEGIDIndexMismatch on Pod ml/trainer-0") {
		t.Errorf("error %q names not the reason and the object", err)
	}

	cs := fake.NewClientset()
	e := Event{Object: pod("p"), Type: corev1.EventTypeNormal, Reason: "R", Time: t0}
	if err := Post(context.Background(), cs, e); err != nil {
		t.Fatal(err)
	}
	if err := Post(context.Background(), cs, e); !apierrors.IsAlreadyExists(err) {
		t.Errorf("the same Event twice: %v, want AlreadyExists", err)
	}
}

// TestPostWithoutClientIsAnError: no client is an error, not a panic.
func TestPostWithoutClientIsAnError(t *testing.T) {
	t.Parallel()
	if err := Post(context.Background(), nil, Event{Object: pod("p"), Reason: "R"}); err == nil {
		t.Error("Post with no client succeeded")
	}
}
