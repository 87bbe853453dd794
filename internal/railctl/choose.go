package railctl

import (
	"cmp"
	"context"
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/railyard-io/railyard/internal/jobrails"
	"github.com/railyard-io/railyard/internal/kubeevent"
)

// Chooser chooses rail sets with internal/jobrails from the cluster's
// ResourceSlices, ResourceClaims and DeviceTaintRules: the same
// Inventory, Choose and ClaimTemplate `railyard rails template` runs.
type Chooser struct {
	Client kubernetes.Interface
	// GPUDriver and GPUClass: the GPUs' DRA driver and DeviceClass
	// (default jobrails.DefaultGPUClass).
	GPUDriver, GPUClass string
	// Tolerations go on every request of every template, and count the
	// devices they admit.
	Tolerations []resourceapi.DeviceToleration
}

// cluster lists what Inventory reads. DeviceTaintRules a cluster does not
// serve (before 1.37) or lets the controller not list are left out, as
// `rails template` does (its answer then errs on the side of more room).
func (c *Chooser) cluster(ctx context.Context) (jobrails.Cluster, error) {
	sl, err := c.Client.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{})
	if err != nil {
		return jobrails.Cluster{}, fmt.Errorf("listing ResourceSlices: %w", err)
	}
	cl, err := c.Client.ResourceV1().ResourceClaims("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return jobrails.Cluster{}, fmt.Errorf("listing ResourceClaims: %w", err)
	}
	var out jobrails.Cluster
	for i := range sl.Items {
		out.Slices = append(out.Slices, &sl.Items[i])
	}
	for i := range cl.Items {
		out.Claims = append(out.Claims, &cl.Items[i])
	}
	rules, err := c.Client.ResourceV1().DeviceTaintRules().List(ctx, metav1.ListOptions{})
	switch {
	case err == nil:
		for i := range rules.Items {
			out.TaintRules = append(out.TaintRules, &rules.Items[i])
		}
	case apierrors.IsNotFound(err) || apierrors.IsForbidden(err):
	default:
		return jobrails.Cluster{}, fmt.Errorf("listing DeviceTaintRules: %w", err)
	}
	return out, nil
}

// Choose is jobrails.Choose on the cluster now, for pods pods of gpus
// GPUs, and the rails in NIC order where the cluster's nodes agree on it
// (nil otherwise). Its error wraps jobrails.ErrNoRoom when the best set
// has room on fewer nodes than pods; the Choice then still holds that
// set, unless no node has whole rails of gpus GPUs at all.
func (c *Chooser) Choose(ctx context.Context, pods, gpus int) (jobrails.Choice, map[int64]int64, error) {
	cl, err := c.cluster(ctx)
	if err != nil {
		return jobrails.Choice{}, nil, err
	}
	nodes := jobrails.Inventory(cl, jobrails.InventoryOptions{GPUDriver: cmp.Or(c.GPUDriver, jobrails.DefaultGPUClass), Tolerations: c.Tolerations})
	var toNIC map[int64]int64
	if order, err := jobrails.NICOrder(nodes); err == nil {
		toNIC = jobrails.RailToNIC(order)
	}
	choice, err := jobrails.Choose(nodes, pods, gpus)
	return choice, toNIC, err
}

// Template is the job's template of generation gen on set s:
// jobrails.ClaimTemplate (what `rails template` prints) named
// TemplateName(j, gen), with the job's labels (LabelJobID, LabelJob when
// the name is a label value, LabelManagedBy), annotations (AnnotationJob,
// AnnotationGeneration) and, when the job is an object, an
// ownerReference to it.
func (c *Chooser) Template(j Job, gen int, s jobrails.Set, toNIC map[int64]int64) (*resourceapi.ResourceClaimTemplate, error) {
	t, err := jobrails.ClaimTemplate(TemplateName(j, gen), j.Namespace, s,
		jobrails.Options{GPUClass: c.GPUClass, Tolerations: c.Tolerations, NICRails: toNIC})
	if err != nil {
		return nil, fmt.Errorf("template for %s: %w", j, err)
	}
	t.Labels = map[string]string{LabelJobID: j.ID(), LabelManagedBy: ManagedBy}
	if len(j.Name) <= 63 && labelValue(j.Name) {
		t.Labels[LabelJob] = j.Name
	}
	t.Annotations[AnnotationJob] = j.String()
	t.Annotations[AnnotationGeneration] = strconv.Itoa(gen)
	if j.Owner != nil {
		t.OwnerReferences = []metav1.OwnerReference{*j.Owner}
	}
	return t, nil
}

// labelValue says whether s is a label value (alphanumerics, '-', '_',
// '.', alphanumeric at both ends).
func labelValue(s string) bool {
	for i, r := range s {
		alnum := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9'
		if !alnum && (i == 0 || i == len(s)-1 || r != '-' && r != '_' && r != '.') {
			return false
		}
	}
	return true
}

// generation is a template's AnnotationGeneration (0 when unreadable).
func generation(t *resourceapi.ResourceClaimTemplate) int {
	n, err := strconv.Atoi(t.Annotations[AnnotationGeneration])
	if err != nil {
		return 0
	}
	return n
}

// current is the template of the highest generation among ts (nil none).
func current(ts []*resourceapi.ResourceClaimTemplate) *resourceapi.ResourceClaimTemplate {
	var best *resourceapi.ResourceClaimTemplate
	for _, t := range ts {
		if best == nil || generation(t) > generation(best) {
			best = t
		}
	}
	return best
}

// jobTemplates lists the templates of the job of ID id in namespace.
func jobTemplates(ctx context.Context, cs kubernetes.Interface, namespace, id string) ([]*resourceapi.ResourceClaimTemplate, error) {
	list, err := cs.ResourceV1().ResourceClaimTemplates(namespace).List(ctx, metav1.ListOptions{
		LabelSelector: LabelManagedBy + "=" + ManagedBy + "," + LabelJobID + "=" + id})
	if err != nil {
		return nil, fmt.Errorf("listing the templates of job %s in %s: %w", id, namespace, err)
	}
	out := make([]*resourceapi.ResourceClaimTemplate, len(list.Items))
	for i := range list.Items {
		out[i] = &list.Items[i]
	}
	return out, nil
}

// event records an event on the job's object, or on template t for a
// job with none (named by label), through internal/kubeevent.
func event(ctx context.Context, cs kubernetes.Interface, now time.Time, j Job, t *resourceapi.ResourceClaimTemplate, typ, reason, msg string) error {
	obj := corev1.ObjectReference{APIVersion: resourceapi.SchemeGroupVersion.String(), Kind: "ResourceClaimTemplate",
		Namespace: t.Namespace, Name: t.Name, UID: t.UID}
	if j.Owner != nil {
		obj = corev1.ObjectReference{APIVersion: j.Owner.APIVersion, Kind: j.Owner.Kind, Namespace: j.Namespace, Name: j.Owner.Name, UID: j.Owner.UID}
	}
	err := kubeevent.Post(ctx, cs, kubeevent.Event{Object: obj, Type: typ, Reason: reason, Message: msg,
		Source: corev1.EventSource{Component: ManagedBy}, Time: now})
	if err != nil {
		return fmt.Errorf("job %s: %w", j, err)
	}
	return nil
}
