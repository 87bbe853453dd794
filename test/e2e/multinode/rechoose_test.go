//go:build e2e

package multinode

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/railyard-io/railyard/internal/jobrails"
	"github.com/railyard-io/railyard/internal/railctl"
	"github.com/railyard-io/railyard/test/e2e/framework"
)

// holdGate holds a job's pods until the test lets them go: a stand-in for
// a queue's admission gate (Kueue's pod integration gates its pods so).
const holdGate = "railyard.io/test-hold"

// testRechoose (a subtest of TestRailsChosenAtAdmissionStandInGPUDRA, the controller
// running with rechooseAfter 5s and resync 2s): Job rails-c's pods are
// admitted held by a scheduling gate, so the webhook chooses their set
// while they wait; then that set's first rail loses its NIC on both nodes
// (port DOWN: the agents taint them NoSchedule) and the pods are let go.
// Both are Unschedulable; the leader's loop chooses another set
// (template generation 2), records RailsRechosen on the Job and deletes
// the pending pods; the Job controller recreates them on the new
// template, and they run on two nodes on the new set.
func testRechoose(ctx context.Context, t *testing.T, c *framework.MultiCluster) {
	gpus := c.Info.GPUNodes()
	pod := framework.BusyboxPod("", "", "sleep", "3600").Spec
	pod.SchedulingGates = []corev1.PodSchedulingGate{{Name: holdGate}}
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "rails-c"},
		Spec: batchv1.JobSpec{
			// A deleted pending pod counts as a failure of its Job.
			Parallelism: ptr.To[int32](2), Completions: ptr.To[int32](2), BackoffLimit: ptr.To[int32](6),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{
					Labels:      map[string]string{railctl.LabelRails: railctl.RailsSame},
					Annotations: map[string]string{railctl.AnnotationGPUs: "4", railctl.AnnotationPods: "2"},
				},
				Spec: pod,
			},
		},
	}
	j, err := c.Client.BatchV1().Jobs("default").Create(ctx, job, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { deleteJob(context.Background(), t, c, "rails-c") })
	sel := metav1.ListOptions{LabelSelector: batchv1.JobNameLabel + "=rails-c"}
	poll(ctx, t, "rails-c's two pods admitted, held", func(ctx context.Context) (bool, string) {
		list, err := c.Client.CoreV1().Pods("default").List(ctx, sel)
		if err != nil {
			return false, err.Error()
		}
		return len(list.Items) == 2, fmt.Sprintf("%d pods", len(list.Items))
	})
	first := templateOf(ctx, t, c, "rails-c", 1)
	set1, err := parseRails(first.Annotations[jobrails.AnnotationRails])
	if err != nil {
		t.Fatal(err)
	}
	// The set's first rail gone on both nodes: no room on it.
	lost := int(set1[0])
	for _, n := range gpus[:2] {
		taintRailNIC(ctx, t, c, n, lost)
	}
	start := time.Now()
	release := func(ctx context.Context) (running int, err error) {
		list, err := c.Client.CoreV1().Pods("default").List(ctx, sel)
		if err != nil {
			return 0, err
		}
		for _, p := range list.Items {
			if p.Status.Phase == corev1.PodRunning {
				running++
			}
			if len(p.Spec.SchedulingGates) > 0 && p.DeletionTimestamp == nil {
				if _, err := c.Client.CoreV1().Pods("default").Patch(ctx, p.Name, types.MergePatchType,
					[]byte(`{"spec":{"schedulingGates":null}}`), metav1.PatchOptions{}); err != nil {
					return 0, fmt.Errorf("letting %s go: %w", p.Name, err)
				}
			}
		}
		return running, nil
	}
	var second *resourceapi.ResourceClaimTemplate
	poll(ctx, t, "rails-c re-chosen (template generation 2)", func(ctx context.Context) (bool, string) {
		if _, err := release(ctx); err != nil {
			return false, err.Error()
		}
		ts, err := jobTemplates(ctx, c, "rails-c")
		if err != nil {
			return false, err.Error()
		}
		for _, tm := range ts {
			if tm.Annotations[railctl.AnnotationGeneration] == "2" {
				second = &tm
				return true, ""
			}
		}
		return false, fmt.Sprintf("%d templates", len(ts))
	})
	t.Logf("rails-c on rails %v, rail %d's NICs gone on both nodes: re-chosen to %s (%s) in %v", set1, lost, second.Annotations[jobrails.AnnotationRails], second.Name, time.Since(start).Round(time.Millisecond))
	set2, err := parseRails(second.Annotations[jobrails.AnnotationRails])
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(set2, int64(lost)) {
		t.Errorf("re-chosen set %v holds rail %d, which has no NIC free on either node", set2, lost)
	}
	// The controller records the event after it made the template and
	// deleted the pods.
	var why string
	poll(ctx, t, "a RailsRechosen event on Job rails-c", func(ctx context.Context) (bool, string) {
		evs, err := c.Client.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.uid=" + string(j.UID)})
		if err != nil {
			return false, err.Error()
		}
		for _, e := range evs.Items {
			if e.Reason == "RailsRechosen" {
				why = e.Message
				return true, ""
			}
		}
		return false, fmt.Sprintf("%d events", len(evs.Items))
	})
	if !strings.Contains(why, second.Name) {
		t.Errorf("the Job's RailsRechosen event: %q, want one naming %s", why, second.Name)
	}
	t.Logf("event RailsRechosen on Job rails-c: %s", why)
	poll(ctx, t, "rails-c's pods running on the new set", func(ctx context.Context) (bool, string) {
		n, err := release(ctx)
		if err != nil {
			return false, err.Error()
		}
		return n == 2, fmt.Sprintf("%d running", n)
	})
	list, err := c.Client.CoreV1().Pods("default").List(ctx, sel)
	if err != nil {
		t.Fatal(err)
	}
	nodes := map[string]bool{}
	for _, p := range list.Items {
		if p.Status.Phase != corev1.PodRunning {
			continue
		}
		rails := podClaimRails(ctx, t, c, &p, second.Name)
		if !slices.Equal(rails, set2) {
			t.Errorf("pod %s on %s: NICs on rails %v, want %v", p.Name, p.Spec.NodeName, rails, set2)
		}
		nodes[p.Spec.NodeName] = true
	}
	if len(nodes) != 2 {
		t.Errorf("rails-c's pods on nodes %v, want two", nodes)
	}
	t.Logf("rails-c's recreated pods run on %v on rails %v, %v after the pods were let go", nodes, set2, time.Since(start).Round(time.Millisecond))
	if j, err = c.Client.BatchV1().Jobs("default").Get(ctx, "rails-c", metav1.GetOptions{}); err == nil {
		t.Logf("Job rails-c's status: active %d, failed %d (the deleted pending pods), backoffLimit %d", j.Status.Active, j.Status.Failed, *j.Spec.BackoffLimit)
	}
}

// jobTemplates lists the templates the controller made for Job name in
// default.
func jobTemplates(ctx context.Context, c *framework.MultiCluster, name string) ([]resourceapi.ResourceClaimTemplate, error) {
	list, err := c.Client.ResourceV1().ResourceClaimTemplates("default").List(ctx, metav1.ListOptions{
		LabelSelector: railctl.LabelManagedBy + "=" + railctl.ManagedBy + "," + railctl.LabelJob + "=" + name})
	if err != nil {
		return nil, err
	}
	return list.Items, nil
}

// templateOf is generation gen of Job name's templates.
func templateOf(ctx context.Context, t *testing.T, c *framework.MultiCluster, name string, gen int) *resourceapi.ResourceClaimTemplate {
	t.Helper()
	ts, err := jobTemplates(ctx, c, name)
	if err != nil {
		t.Fatal(err)
	}
	for i := range ts {
		if ts[i].Annotations[railctl.AnnotationGeneration] == strconv.Itoa(gen) {
			return &ts[i]
		}
	}
	t.Fatalf("job %s: no template of generation %d among %d", name, gen, len(ts))
	return nil
}
