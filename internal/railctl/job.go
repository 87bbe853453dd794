package railctl

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/railyard-io/railyard/internal/jobrails"
)

// The interface of pods and templates (docs/alloc.md, "Rails chosen at
// admission").
const (
	// LabelRails = RailsSame on a pod asks for its job's rail set.
	LabelRails = "railyard.io/rails"
	RailsSame  = "same"
	// LabelJob names the job of a pod without an owner (a bare pod); on
	// a template it names the template's job.
	LabelJob = jobrails.LabelJob
	// AnnotationGPUs is a pod's GPUs (and NICs: one NIC per GPU, on its
	// rail), default 1.
	AnnotationGPUs = "railyard.io/rails-gpus"
	// AnnotationPods is the job's pod count, default the pods seen (at
	// least 1): the set must have room for a pod on that many nodes.
	AnnotationPods = "railyard.io/rails-pods"
	// LabelJobID on a template is its job's ID (Job.ID).
	LabelJobID = "railyard.io/rails-job"
	// LabelManagedBy = ManagedBy marks the templates the controller made.
	LabelManagedBy = "app.kubernetes.io/managed-by"
	ManagedBy      = "railyard-rails-controller"
	// AnnotationJob on a template is its job (Job.String).
	AnnotationJob = "railyard.io/rails-job"
	// AnnotationGeneration on a template counts the job's choices: 1 at
	// admission, +1 per re-choice.
	AnnotationGeneration = "railyard.io/rails-generation"
	// ClaimName is the pod's claim (spec.resourceClaims[].name).
	ClaimName = "railyard-rails"
)

// ErrNoJob is returned for a pod labelled railyard.io/rails=same that has
// neither an owner, a PodGroup nor a railyard.io/job label.
var ErrNoJob = errors.New("pod asks for its job's rails (" + LabelRails + "=" + RailsSame + ") but has no job: no controller owner, no spec.schedulingGroup.podGroupName, no " + LabelJob + " label")

// Job is the unit that gets one rail set.
type Job struct {
	Namespace string
	// Kind is "Kind.group" of the job object ("JobSet.jobset.x-k8s.io",
	// "Job.batch", "PodGroup.scheduling.k8s.io"), or LabelJob for a job
	// named by label.
	Kind, Name string
	// Owner references the job object, for the template's
	// ownerReferences; nil for a job named by label or a PodGroup that
	// does not exist (yet): the controller deletes such a job's templates
	// when no pod of the job is left.
	Owner *metav1.OwnerReference
}

// String is "Kind.group namespace/name".
func (j Job) String() string { return j.Kind + " " + j.Namespace + "/" + j.Name }

// ID is a label value unique to the job (a hash of its namespace, kind,
// name and UID: a job recreated under its name is a new job).
func (j Job) ID() string {
	uid := ""
	if j.Owner != nil {
		uid = string(j.Owner.UID)
	}
	h := sha256.Sum256([]byte(j.Namespace + "\x00" + j.Kind + "\x00" + j.Name + "\x00" + uid))
	return hex.EncodeToString(h[:8])
}

// maxBase bounds the job name's part of a template name.
const maxBase = 40

// TemplateName is the name of the job's template of generation gen:
// "<name>-rails-<id>-<gen>" (name lowered, cut to 40 characters, invalid
// characters as "-"; the ID keeps two jobs of one name apart).
func TemplateName(j Job, gen int) string {
	var b strings.Builder
	for _, r := range strings.ToLower(j.Name) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	base := b.String()
	if len(base) > maxBase {
		base = base[:maxBase]
	}
	base = strings.Trim(base, "-")
	if base == "" {
		base = "job"
	}
	return fmt.Sprintf("%s-rails-%s-%d", base, j.ID()[:8], gen)
}

// Owners looks up what a pod's references do not say: the controller of
// a batch Job (a JobSet's or MPIJob's Job) and a PodGroup's UID. Each
// returns nil, nil when the object does not exist.
type Owners interface {
	JobController(ctx context.Context, namespace, name string) (*metav1.OwnerReference, error)
	PodGroup(ctx context.Context, namespace, name string) (*metav1.OwnerReference, error)
}

// JobOf is the job of pod (in namespace, as admission gives it: a new
// pod's namespace may be empty in the object): the controller owner of
// its batch Job when the Job has one (JobSet, MPIJob launcher), else its
// own controller owner (a Job, an MPIJob's workers, any controller);
// without one, its PodGroup (spec.schedulingGroup.podGroupName); without
// one, its railyard.io/job label.
func JobOf(ctx context.Context, namespace string, pod *corev1.Pod, o Owners) (Job, error) {
	if ref := metav1.GetControllerOf(pod); ref != nil {
		gv, err := schema.ParseGroupVersion(ref.APIVersion)
		if err != nil {
			return Job{}, fmt.Errorf("owner %s %s: %w", ref.Kind, ref.Name, err)
		}
		if gv.Group == "batch" && ref.Kind == "Job" {
			top, err := o.JobController(ctx, namespace, ref.Name)
			if err != nil {
				return Job{}, fmt.Errorf("reading Job %s/%s: %w", namespace, ref.Name, err)
			}
			if top != nil {
				ref = top
				if gv, err = schema.ParseGroupVersion(ref.APIVersion); err != nil {
					return Job{}, fmt.Errorf("owner %s %s: %w", ref.Kind, ref.Name, err)
				}
			}
		}
		return Job{Namespace: namespace, Kind: kindGroup(ref.Kind, gv.Group), Name: ref.Name, Owner: ownerRef(ref)}, nil
	}
	if g := pod.Spec.SchedulingGroup; g != nil && g.PodGroupName != nil && *g.PodGroupName != "" {
		ref, err := o.PodGroup(ctx, namespace, *g.PodGroupName)
		if err != nil {
			return Job{}, fmt.Errorf("reading PodGroup %s/%s: %w", namespace, *g.PodGroupName, err)
		}
		return Job{Namespace: namespace, Kind: "PodGroup.scheduling.k8s.io", Name: *g.PodGroupName, Owner: ref}, nil
	}
	if name := pod.Labels[LabelJob]; name != "" {
		return Job{Namespace: namespace, Kind: LabelJob, Name: name}, nil
	}
	return Job{}, ErrNoJob
}

func kindGroup(kind, group string) string {
	if group == "" {
		return kind
	}
	return kind + "." + group
}

// ownerRef is a reference for the template's ownerReferences: not a
// controller (the job's own controller owns its pods, not this), and not
// blocking the owner's deletion (that needs the right to update the
// owner's finalizers).
func ownerRef(r *metav1.OwnerReference) *metav1.OwnerReference {
	return &metav1.OwnerReference{APIVersion: r.APIVersion, Kind: r.Kind, Name: r.Name, UID: r.UID}
}

// Want is what a pod of the job asks for.
type Want struct {
	// GPUs per pod (AnnotationGPUs, default 1); each with a NIC of its
	// rail.
	GPUs int
	// Pods of the job (AnnotationPods; 0 when not said).
	Pods int
}

// maxCount bounds the annotations' numbers.
const maxCount = 4096

// WantOf reads the pod's annotations.
func WantOf(pod *corev1.Pod) (Want, error) {
	w := Want{GPUs: 1}
	for key, into := range map[string]*int{AnnotationGPUs: &w.GPUs, AnnotationPods: &w.Pods} {
		v, ok := pod.Annotations[key]
		if !ok {
			continue
		}
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < 1 || n > maxCount {
			return Want{}, fmt.Errorf("annotation %s=%q: want a whole number from 1 to %d", key, v, maxCount)
		}
		*into = n
	}
	return w, nil
}

func metaName(namespace, name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: namespace, Name: name}
}
