package benchrun

import (
	"errors"
	"fmt"
	"io"
	"sort"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/railyard-io/railyard/internal/benchplan"
)

const (
	kindPod     = "Pod"
	kindService = "Service"
	// kindClaimTemplate is a resource.k8s.io/v1 ResourceClaimTemplate: a
	// plan's rails delivered by DRA (bench plan --device-class).
	kindClaimTemplate = "ResourceClaimTemplate"
	// maxPlanObjects bounds a plan: bench plan writes a few dozen objects.
	maxPlanObjects = 1000
)

// Plan is the objects to run, grouped into runs.
type Plan struct {
	Runs []Run
}

// Run is one benchmark: a pair of pods (or one pod) and their Services,
// sharing a benchplan.LabelRun label.
type Run struct {
	Name    string // the benchplan.LabelRun value
	Test    string // benchplan.LabelTest (perftest, probe)
	Variant string // benchplan.LabelVariant (rdma, tcp, tcp-podnet): the report's scenario
	// Scenario is benchplan.LabelScenario when set (gpudirect-near,
	// gpudirect-far), the report's scenario instead of the variant.
	Scenario string
	// After is the run that must finish before this one starts
	// (benchplan.AnnotationAfterRun), "" for none.
	After string
	// ClaimTemplates are the run's ResourceClaimTemplates (its DRA
	// rails), created before its pods or MPIJob.
	ClaimTemplates []*resourceapi.ResourceClaimTemplate
	Services       []*corev1.Service
	// Pods in creation order: pods without benchplan.AnnotationServerPod
	// first.
	Pods []*corev1.Pod
	// Result is the pod whose log is the run's result; nil for an MPIJob
	// run, whose result is its launcher pod's log.
	Result *corev1.Pod
	// MPIJob is the run's MPIJob (kubeflow.org/v2beta1), alone in its run:
	// no Pods or Services beside it.
	MPIJob *unstructured.Unstructured
}

// Load reads a plan: the multi-document YAML (or JSON) that `railyard
// bench plan` prints. Pods, Services, resource.k8s.io/v1
// ResourceClaimTemplates and kubeflow.org/v2beta1 MPIJobs are accepted.
func Load(r io.Reader) (Plan, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(r, 4096)
	var objs []runtime.Object
	for i := 0; ; i++ {
		var u unstructured.Unstructured
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return Plan{}, fmt.Errorf("plan document %d: %w", i+1, err)
		}
		if len(u.Object) == 0 {
			continue // an empty document
		}
		if len(objs) >= maxPlanObjects {
			return Plan{}, fmt.Errorf("plan: more than %d objects", maxPlanObjects)
		}
		obj, err := typed(&u)
		if err != nil {
			return Plan{}, fmt.Errorf("plan document %d: %w", i+1, err)
		}
		objs = append(objs, obj)
	}
	return FromObjects(objs)
}

// typed converts a Pod, a Service or a ResourceClaimTemplate to its Go
// type, rejecting unknown fields (a misspelt field would silently do
// nothing); an MPIJob stays unstructured (the API server validates it
// against the operator's CRD).
func typed(u *unstructured.Unstructured) (runtime.Object, error) {
	gvk := u.GroupVersionKind()
	var obj runtime.Object
	switch {
	case gvk.Group == "" && gvk.Version == "v1" && gvk.Kind == kindPod:
		obj = &corev1.Pod{}
	case gvk.Group == "" && gvk.Version == "v1" && gvk.Kind == kindService:
		obj = &corev1.Service{}
	case gvk.Group == resourceapi.GroupName && gvk.Version == "v1" && gvk.Kind == kindClaimTemplate:
		obj = &resourceapi.ResourceClaimTemplate{}
	case gvk.Kind == kindMPIJob:
		if err := checkMPIJob(u); err != nil {
			return nil, err
		}
		// Decoded again as the API machinery decodes: integers as int64.
		data, err := u.MarshalJSON()
		if err != nil {
			return nil, fmt.Errorf("MPIJob %s: %w", u.GetName(), err)
		}
		job := &unstructured.Unstructured{}
		if err := job.UnmarshalJSON(data); err != nil {
			return nil, fmt.Errorf("MPIJob %s: %w", u.GetName(), err)
		}
		return job, nil
	default:
		return nil, fmt.Errorf("%s %s: bench run creates only v1 Pods and Services, resource.k8s.io/v1 ResourceClaimTemplates and %s MPIJobs", gvk.String(), u.GetName(), benchplan.MPIJobAPIVersion)
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(u.Object, obj, true); err != nil {
		return nil, fmt.Errorf("%s %s: %w", gvk.Kind, u.GetName(), err)
	}
	return obj, nil
}

// FromObjects groups Pods, Services and MPIJobs (benchplan.Objects'
// output, say) into runs. Every Pod and Service needs a benchplan.LabelRun
// label, every run of pods one pod annotated benchplan.AnnotationResult,
// and a server pod named by benchplan.AnnotationServerPod must be in the
// same run. An MPIJob is a run of its own, named by its LabelRun label or
// else by the MPIJob's name; its test is its LabelTest label or else its
// app.kubernetes.io/component label (bench plan's nccl, osu, horovod).
func FromObjects(objs []runtime.Object) (Plan, error) {
	byName := map[string]*Run{}
	seen := map[string]bool{}
	var errs []error
	get := func(kind string, labels map[string]string, ns, name string) *Run {
		key := kind + "/" + ns + "/" + name
		if seen[key] {
			errs = append(errs, fmt.Errorf("%s: listed twice", key))
			return nil
		}
		seen[key] = true
		run := labels[benchplan.LabelRun]
		if run == "" {
			errs = append(errs, fmt.Errorf("%s: no %s label (bench run runs what bench plan writes)", key, benchplan.LabelRun))
			return nil
		}
		if byName[run] == nil {
			byName[run] = &Run{Name: run, Test: labels[benchplan.LabelTest], Variant: labels[benchplan.LabelVariant],
				Scenario: labels[benchplan.LabelScenario]}
		}
		return byName[run]
	}
	for _, obj := range objs {
		switch o := obj.(type) {
		case *corev1.Pod:
			if r := get(kindPod, o.Labels, o.Namespace, o.Name); r != nil {
				r.Pods = append(r.Pods, o.DeepCopy())
			}
		case *corev1.Service:
			if r := get(kindService, o.Labels, o.Namespace, o.Name); r != nil {
				r.Services = append(r.Services, o.DeepCopy())
			}
		case *resourceapi.ResourceClaimTemplate:
			if r := get(kindClaimTemplate, o.Labels, o.Namespace, o.Name); r != nil {
				r.ClaimTemplates = append(r.ClaimTemplates, o.DeepCopy())
			}
		case *unstructured.Unstructured:
			if o.GetKind() != kindMPIJob {
				errs = append(errs, fmt.Errorf("%s %s: bench run creates only Pods, Services, ResourceClaimTemplates and MPIJobs", o.GetKind(), o.GetName()))
				continue
			}
			if err := checkMPIJob(o); err != nil {
				errs = append(errs, err)
				continue
			}
			labels := map[string]string{benchplan.LabelRun: o.GetName(), benchplan.LabelTest: o.GetLabels()[labelComponent]}
			for k, v := range o.GetLabels() {
				if v != "" {
					labels[k] = v
				}
			}
			if r := get(kindMPIJob, labels, o.GetNamespace(), o.GetName()); r != nil {
				if r.MPIJob != nil {
					errs = append(errs, fmt.Errorf("run %s: two MPIJobs (%s, %s)", r.Name, r.MPIJob.GetName(), o.GetName()))
					continue
				}
				r.MPIJob = o.DeepCopy()
				r.After = o.GetAnnotations()[benchplan.AnnotationAfterRun]
			}
		default:
			errs = append(errs, fmt.Errorf("%T: bench run creates only Pods, Services, ResourceClaimTemplates and MPIJobs", obj))
		}
	}
	var p Plan
	for _, r := range byName {
		if err := r.finish(); err != nil {
			errs = append(errs, err)
		}
		p.Runs = append(p.Runs, *r)
	}
	errs = append(errs, checkAfter(byName)...)
	if err := errors.Join(errs...); err != nil {
		return Plan{}, fmt.Errorf("plan: %w", err)
	}
	if len(p.Runs) == 0 {
		return Plan{}, errors.New("plan: no runs (no Pods, no MPIJobs)")
	}
	sort.Slice(p.Runs, func(i, j int) bool { return p.Runs[i].Name < p.Runs[j].Name })
	return p, nil
}

// finish picks the result pod, orders servers before clients and checks
// the server references.
func (r *Run) finish() error {
	if len(r.ClaimTemplates) > 0 && r.MPIJob == nil && len(r.Pods) == 0 {
		return fmt.Errorf("run %s: ResourceClaimTemplate %s has no pod or MPIJob in its run", r.Name, r.ClaimTemplates[0].Name)
	}
	if r.MPIJob != nil {
		if len(r.Pods) > 0 || len(r.Services) > 0 {
			return fmt.Errorf("run %s: MPIJob %s shares its run with Pods or Services (an MPIJob is a run of its own)", r.Name, r.MPIJob.GetName())
		}
		return nil
	}
	var servers, clients []*corev1.Pod
	names := map[string]bool{}
	for _, p := range r.Pods {
		names[p.Namespace+"/"+p.Name] = true
		if p.Annotations[benchplan.AnnotationResult] == "true" {
			if r.Result != nil {
				return fmt.Errorf("run %s: two result pods (%s, %s)", r.Name, r.Result.Name, p.Name)
			}
			r.Result = p
		}
	}
	if r.Result == nil {
		return fmt.Errorf("run %s: no pod annotated %s=true", r.Name, benchplan.AnnotationResult)
	}
	for _, p := range r.Pods {
		after := p.Annotations[benchplan.AnnotationAfterRun]
		if after != "" && r.After != "" && after != r.After {
			return fmt.Errorf("run %s: its pods wait for different runs (%s, %s)", r.Name, r.After, after)
		}
		if after != "" {
			r.After = after
		}
	}
	for _, p := range r.Pods {
		server := p.Annotations[benchplan.AnnotationServerPod]
		if server == "" {
			servers = append(servers, p)
			continue
		}
		if !names[p.Namespace+"/"+server] {
			return fmt.Errorf("run %s: pod %s names server pod %s, not in the run", r.Name, p.Name, server)
		}
		if p.Annotations[benchplan.AnnotationServerPod] == p.Name {
			return fmt.Errorf("run %s: pod %s names itself as its server", r.Name, p.Name)
		}
		clients = append(clients, p)
	}
	for _, c := range clients {
		for _, s := range clients {
			if c.Annotations[benchplan.AnnotationServerPod] == s.Name {
				return fmt.Errorf("run %s: client %s waits for client %s (one level of servers only)", r.Name, c.Name, s.Name)
			}
		}
	}
	r.Pods = append(servers, clients...)
	return nil
}

// checkAfter checks that every run waits only for another run of the plan
// and that no chain of waits comes back to where it started.
func checkAfter(runs map[string]*Run) []error {
	var errs []error
	for name, r := range runs {
		if r.After == "" {
			continue
		}
		if runs[r.After] == nil {
			errs = append(errs, fmt.Errorf("run %s: waits for run %s, not in the plan", name, r.After))
			continue
		}
		seen := map[string]bool{name: true}
		for cur := r.After; cur != ""; cur = runs[cur].After {
			if seen[cur] {
				errs = append(errs, fmt.Errorf("run %s: its runs wait for each other in a cycle", name))
				break
			}
			seen[cur] = true
			if runs[cur] == nil {
				break
			}
		}
	}
	return errs
}

// SetNamespace moves every object of the plan to ns.
func (p *Plan) SetNamespace(ns string) {
	for i := range p.Runs {
		for _, s := range p.Runs[i].Services {
			s.Namespace = ns
		}
		for _, pod := range p.Runs[i].Pods {
			pod.Namespace = ns
		}
		for _, t := range p.Runs[i].ClaimTemplates {
			t.Namespace = ns
		}
		if j := p.Runs[i].MPIJob; j != nil {
			j.SetNamespace(ns)
		}
	}
}
