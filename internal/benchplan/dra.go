package benchplan

import (
	"maps"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Rails delivered by DRA: every run whose pods request rails with a
// DeviceClass gets one ResourceClaimTemplate, ClaimTemplateName(run), with
// one request per such rail; each of the run's pods claims from it under
// RailsClaim, so the scheduler allocates each pod its own devices.
const (
	// RailsClaim is the name of the pod's claim (spec.resourceClaims) on
	// its run's template, and of the container's claim (resources.claims).
	RailsClaim = "rails"
	// railsComponent is the template's app.kubernetes.io/component.
	railsComponent = "rails"
	// railRequestPrefix names a rail's request in the claim: rail<i>, i
	// the rail's index among all rails.
	railRequestPrefix = "rail"
)

// ClaimTemplateName is the ResourceClaimTemplate of a run's DRA rails (run:
// its LabelRun value, an MPIJob's name).
func ClaimTemplateName(run string) string { return run + "-" + RailsClaim }

// hasDRA reports whether any rail is delivered by DRA.
func hasDRA(rails []Rail) bool {
	for _, r := range rails {
		if r.DeviceClass != "" {
			return true
		}
	}
	return false
}

// railsTemplate is run's ResourceClaimTemplate: one request of Count
// devices per DRA rail, in rail order.
func railsTemplate(o Options, run string, labels map[string]string) *resourceapi.ResourceClaimTemplate {
	var reqs []resourceapi.DeviceRequest
	for i, r := range o.Rails {
		if r.DeviceClass == "" {
			continue
		}
		reqs = append(reqs, resourceapi.DeviceRequest{
			Name: railRequestPrefix + itoa(i),
			Exactly: &resourceapi.ExactDeviceRequest{
				DeviceClassName: r.DeviceClass,
				AllocationMode:  resourceapi.DeviceAllocationModeExactCount,
				Count:           int64(r.Count),
			},
		})
	}
	return &resourceapi.ResourceClaimTemplate{
		TypeMeta:   metav1.TypeMeta{APIVersion: resourceapi.SchemeGroupVersion.String(), Kind: "ResourceClaimTemplate"},
		ObjectMeta: metav1.ObjectMeta{Name: ClaimTemplateName(run), Namespace: o.Namespace, Labels: labels},
		Spec: resourceapi.ResourceClaimTemplateSpec{
			Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: reqs}},
		},
	}
}

// podRailsClaims is a pod's spec.resourceClaims for run's DRA rails.
func podRailsClaims(run string) []corev1.PodResourceClaim {
	tmpl := ClaimTemplateName(run)
	return []corev1.PodResourceClaim{{Name: RailsClaim, ResourceClaimTemplateName: &tmpl}}
}

// withRails returns a pod pair's objects, preceded, when a rail is
// delivered by DRA, by the run's ResourceClaimTemplate (labelled as the
// pods, component rails), each pod claiming from it. The pods' containers
// claim RailsClaim through resources.
func withRails(o Options, svc *corev1.Service, pods ...*corev1.Pod) []runtime.Object {
	objs := []runtime.Object{svc}
	for _, p := range pods {
		objs = append(objs, p)
	}
	if !hasDRA(o.Rails) {
		return objs
	}
	run := pods[0].Labels[LabelRun]
	for _, p := range pods {
		p.Spec.ResourceClaims = podRailsClaims(run)
	}
	labels := maps.Clone(pods[0].Labels)
	labels[labelComponent] = railsComponent
	return append([]runtime.Object{railsTemplate(o, run, labels)}, objs...)
}
