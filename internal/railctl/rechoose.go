package railctl

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Rechoose decides whether a job whose template was made at made is
// chosen again at now, given its pods (those claiming its templates):
// only before any pod of the job started (no pod bound to a node or
// past Pending: a bound pod's claim holds the old set, and moving the
// others would split the job over two sets), only once the template is
// at least after old, and only when some pod has been unschedulable
// (PodScheduled False, reason Unschedulable) for at least after. Whether
// another set has room is the caller's question (Controller.Reconcile
// asks jobrails). The string says why, for the job's event.
func Rechoose(pods []*corev1.Pod, made, now time.Time, after time.Duration) (bool, string) {
	if len(pods) == 0 || now.Sub(made) < after {
		return false, ""
	}
	why := ""
	for _, p := range pods {
		if p.Spec.NodeName != "" || p.Status.Phase != corev1.PodPending && p.Status.Phase != "" {
			return false, ""
		}
		for _, c := range p.Status.Conditions {
			if c.Type != corev1.PodScheduled || c.Status != corev1.ConditionFalse || c.Reason != corev1.PodReasonUnschedulable {
				continue
			}
			if since := now.Sub(c.LastTransitionTime.Time); since >= after && why == "" {
				why = fmt.Sprintf("pod %s unschedulable for %s: %s", p.Name, since.Truncate(time.Second), c.Message)
			}
		}
	}
	return why != "", why
}

// deletable says whether a pending pod of a re-chosen job is deleted for
// its owner to recreate it on the new template: only a pod with a
// controller owner (a bare pod would be gone for good) that no node
// holds yet.
func deletable(p *corev1.Pod) bool {
	if p.Spec.NodeName != "" || p.DeletionTimestamp != nil {
		return false
	}
	for _, r := range p.OwnerReferences {
		if r.Controller != nil && *r.Controller {
			return true
		}
	}
	return false
}
