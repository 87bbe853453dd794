package kubeevent

import (
	"context"
	"fmt"
	"time"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	recordutil "k8s.io/client-go/tools/record/util"
)

// MaxMessage is the most bytes of an Event's message: the API server's
// NoteLengthLimit (k8s.io/kubernetes pkg/apis/core/validation/events.go).
const MaxMessage = 1024

// truncated ends a message cut to MaxMessage, as kube-scheduler's
// truncateMessage ends one (pkg/scheduler/schedule_one.go).
const truncated = " ..."

// Event is one Event to post: what it is about, what happened, who says
// so and when.
type Event struct {
	// Object is the involved object; its name and namespace name the
	// Event and place it.
	Object corev1.ObjectReference
	// Type is corev1.EventTypeNormal or corev1.EventTypeWarning.
	Type string
	// Reason is the short, CamelCase reason ("RoCEGIDIndexMismatch").
	Reason string
	// Message is the human-readable text, cut to MaxMessage bytes.
	Message string
	// Source is the component (and, for a node's agent, the host) that
	// says it.
	Source corev1.EventSource
	// Time is when it happened; time.Now() when zero.
	Time time.Time
}

// Post creates e as a core/v1 Event through cs, synchronously: a nil
// error means the API server holds it. The error wraps the Create's
// (apierrors.IsForbidden, IsNotFound and the rest see through it).
func Post(ctx context.Context, cs kubernetes.Interface, e Event) error {
	if cs == nil {
		return fmt.Errorf("event %s on %s: no Kubernetes client", e.Reason, describe(e.Object))
	}
	ev := build(e)
	if _, err := cs.CoreV1().Events(ev.Namespace).Create(ctx, ev, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("event %s on %s: %w", e.Reason, describe(e.Object), err)
	}
	return nil
}

// build is e as client-go's event recorder makes it
// (k8s.io/client-go/tools/record, event.go: recorderImpl.makeEvent for
// the object, name, namespace, times and count; generateEvent for the
// source and the reporting fields).
func build(e Event) *corev1.Event {
	t := e.Time
	if t.IsZero() {
		t = time.Now()
	}
	now := metav1.NewTime(t)
	ns := e.Object.Namespace
	if ns == "" {
		ns = metav1.NamespaceDefault
	}
	return &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{
			Name:      recordutil.GenerateEventName(e.Object.Name, now.UnixNano()),
			Namespace: ns,
		},
		InvolvedObject:      e.Object,
		Reason:              e.Reason,
		Message:             Truncate(e.Message),
		Type:                e.Type,
		FirstTimestamp:      now,
		LastTimestamp:       now,
		Count:               1,
		Source:              e.Source,
		ReportingController: e.Source.Component,
		ReportingInstance:   e.Source.Host,
	}
}

// Truncate is msg within MaxMessage bytes: msg itself when it fits, else
// its longest prefix that ends on a UTF-8 character boundary and leaves
// room for " ...", followed by it.
func Truncate(msg string) string {
	if len(msg) <= MaxMessage {
		return msg
	}
	cut := MaxMessage - len(truncated)
	for cut > 0 && !utf8.RuneStart(msg[cut]) {
		cut--
	}
	return msg[:cut] + truncated
}

// describe names the object for an error: "Kind namespace/name".
func describe(o corev1.ObjectReference) string {
	name := o.Name
	if o.Namespace != "" {
		name = o.Namespace + "/" + name
	}
	if o.Kind == "" {
		return name
	}
	return o.Kind + " " + name
}
