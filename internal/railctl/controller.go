package railctl

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/railyard-io/railyard/internal/jobrails"
)

// Controller is the leader's loop: it re-chooses jobs stuck on their set
// and deletes templates nothing needs.
type Controller struct {
	Client  kubernetes.Interface
	Chooser *Chooser
	// RechooseAfter is how long a job's pods stay unschedulable on its
	// set before another set is tried (Rechoose).
	RechooseAfter time.Duration
	// Grace is how long a template no pod claims is kept after it is
	// made: the webhook makes it before its first pod exists.
	Grace time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
	Log logr.Logger
}

func (c *Controller) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

// jobState is one job's templates and the pods claiming them.
type jobState struct {
	templates []*resourceapi.ResourceClaimTemplate
	pods      []*corev1.Pod
	// users counts the pods claiming each template, by name.
	users map[string]int
}

// Reconcile looks at every job once: templates of earlier generations
// that no pod claims are deleted once Grace old, and so are all the
// templates of a job with no owner object (named by label, or a PodGroup
// that did not exist) once no pod claims any; a job Rechoose says is
// stuck gets a new template when jobrails finds another set with room
// for all its pods. Errors of one job do not stop the others; they are
// returned joined.
func (c *Controller) Reconcile(ctx context.Context) error {
	tl, err := c.Client.ResourceV1().ResourceClaimTemplates("").List(ctx, metav1.ListOptions{LabelSelector: LabelManagedBy + "=" + ManagedBy})
	if err != nil {
		return fmt.Errorf("listing templates: %w", err)
	}
	pl, err := c.Client.CoreV1().Pods("").List(ctx, metav1.ListOptions{LabelSelector: LabelRails + "=" + RailsSame})
	if err != nil {
		return fmt.Errorf("listing pods: %w", err)
	}
	jobs := map[string]*jobState{} // namespace/ID
	byName := map[string]*jobState{}
	for i := range tl.Items {
		t := &tl.Items[i]
		k := t.Namespace + "/" + t.Labels[LabelJobID]
		if jobs[k] == nil {
			jobs[k] = &jobState{users: map[string]int{}}
		}
		jobs[k].templates = append(jobs[k].templates, t)
		byName[t.Namespace+"/"+t.Name] = jobs[k]
	}
	for i := range pl.Items {
		p := &pl.Items[i]
		name := claimTemplateOf(p)
		if js := byName[p.Namespace+"/"+name]; js != nil && p.DeletionTimestamp == nil {
			js.pods = append(js.pods, p)
			js.users[name]++
		}
	}
	var errs []error
	for _, k := range slices.Sorted(maps.Keys(jobs)) {
		if err := c.reconcileJob(ctx, jobs[k]); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (c *Controller) reconcileJob(ctx context.Context, js *jobState) error {
	now := c.now()
	cur := current(js.templates)
	var errs []error
	for _, t := range js.templates {
		old := now.Sub(t.CreationTimestamp.Time) >= c.Grace
		unowned := len(t.OwnerReferences) == 0 && len(js.pods) == 0
		if js.users[t.Name] == 0 && old && (t != cur || unowned) {
			err := c.Client.ResourceV1().ResourceClaimTemplates(t.Namespace).Delete(ctx, t.Name, metav1.DeleteOptions{})
			if err != nil && !apierrors.IsNotFound(err) {
				errs = append(errs, fmt.Errorf("deleting template %s/%s: %w", t.Namespace, t.Name, err))
			}
		}
	}
	if err := c.rechoose(ctx, now, cur, js.pods); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// rechoose makes the job's next template when Rechoose says so and
// jobrails finds a set other than cur's with room for all the job's
// pods, deletes the job's pending pods that have a controller owner, and
// says why in an event on the job.
func (c *Controller) rechoose(ctx context.Context, now time.Time, cur *resourceapi.ResourceClaimTemplate, pods []*corev1.Pod) error {
	ok, why := Rechoose(pods, cur.CreationTimestamp.Time, now, c.RechooseAfter)
	if !ok {
		return nil
	}
	job, err := jobOfTemplate(cur)
	if err != nil {
		return err
	}
	want, err := WantOf(pods[0])
	if err != nil {
		return fmt.Errorf("%s: %w", job, err)
	}
	n := max(want.Pods, len(pods))
	choice, toNIC, err := c.Chooser.Choose(ctx, n, want.GPUs)
	if err != nil {
		if errors.Is(err, jobrails.ErrNoRoom) {
			c.Log.V(1).Info("no other rail set has room", "job", job.String(), "reason", err.Error())
			return nil
		}
		return fmt.Errorf("re-choosing rails for %s: %w", job, err)
	}
	if choice.Set.String() == cur.Annotations[jobrails.AnnotationRails] {
		return nil // the best set is the job's: it waits for room there
	}
	t, err := c.Chooser.Template(job, generation(cur)+1, choice.Set, toNIC)
	if err != nil {
		return err
	}
	created, err := c.Client.ResourceV1().ResourceClaimTemplates(job.Namespace).Create(ctx, t, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("creating template %s/%s: %w", job.Namespace, t.Name, err)
	}
	var deleted []string
	var errs []error
	for _, p := range pods {
		if !deletable(p) {
			continue
		}
		err := c.Client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &p.UID}})
		switch {
		case err == nil:
			deleted = append(deleted, p.Name)
		case !apierrors.IsNotFound(err) && !apierrors.IsConflict(err):
			errs = append(errs, fmt.Errorf("deleting pod %s/%s: %w", p.Namespace, p.Name, err))
		}
	}
	msg := fmt.Sprintf("%s on rails %s; rails %s have room for a pod on %d nodes: template %s replaces %s; pods deleted for their owner to recreate: %d (%s)",
		why, cur.Annotations[jobrails.AnnotationRails], choice.Set, len(choice.Nodes), created.Name, cur.Name, len(deleted), strings.Join(deleted, ", "))
	if err := event(ctx, c.Client, now, job, created, corev1.EventTypeNormal, "RailsRechosen", msg); err != nil {
		errs = append(errs, err)
	}
	c.Log.Info("rails re-chosen", "job", job.String(), "message", msg)
	return errors.Join(errs...)
}

// jobOfTemplate is the job a template says it is for (AnnotationJob and
// its ownerReference), checked against its LabelJobID.
func jobOfTemplate(t *resourceapi.ResourceClaimTemplate) (Job, error) {
	kind, nsName, ok := strings.Cut(t.Annotations[AnnotationJob], " ")
	ns, name, ok2 := strings.Cut(nsName, "/")
	if !ok || !ok2 {
		return Job{}, fmt.Errorf("template %s/%s: annotation %s=%q is not \"Kind namespace/name\"", t.Namespace, t.Name, AnnotationJob, t.Annotations[AnnotationJob])
	}
	j := Job{Namespace: ns, Kind: kind, Name: name}
	if len(t.OwnerReferences) > 0 {
		j.Owner = ownerRef(&t.OwnerReferences[0])
	}
	if j.ID() != t.Labels[LabelJobID] || ns != t.Namespace {
		return Job{}, fmt.Errorf("template %s/%s: its job %s does not match its label %s=%s", t.Namespace, t.Name, j, LabelJobID, t.Labels[LabelJobID])
	}
	return j, nil
}
