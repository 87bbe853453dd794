package railctl

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
)

// PatchOp is one RFC 6902 JSON patch operation.
type PatchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value,omitempty"`
}

// PodPatch is the patch that gives pod the claim ClaimName from template:
// spec.resourceClaims gains {name: railyard-rails,
// resourceClaimTemplateName: template}, and every container's
// resources.claims gains {name: railyard-rails} (init containers do not:
// a claim is for the pod's work). Each operation is an "add" of the whole
// list or resources object (an add replaces a member that exists), so it
// applies whether or not the field was present. A pod that already has a
// claim named railyard-rails gets no patch: it says its rails itself.
func PodPatch(pod *corev1.Pod, template string) ([]PatchOp, error) {
	if template == "" {
		return nil, fmt.Errorf("no template for pod %s", podName(pod))
	}
	if slices.ContainsFunc(pod.Spec.ResourceClaims, func(c corev1.PodResourceClaim) bool { return c.Name == ClaimName }) {
		return nil, nil
	}
	claims := append(slices.Clone(pod.Spec.ResourceClaims), corev1.PodResourceClaim{Name: ClaimName, ResourceClaimTemplateName: &template})
	ops := []PatchOp{{Op: "add", Path: "/spec/resourceClaims", Value: claims}}
	for i, c := range pod.Spec.Containers {
		if slices.ContainsFunc(c.Resources.Claims, func(rc corev1.ResourceClaim) bool { return rc.Name == ClaimName }) {
			continue
		}
		res := *c.Resources.DeepCopy()
		res.Claims = append(res.Claims, corev1.ResourceClaim{Name: ClaimName})
		ops = append(ops, PatchOp{Op: "add", Path: fmt.Sprintf("/spec/containers/%d/resources", i), Value: res})
	}
	return ops, nil
}

func podName(p *corev1.Pod) string {
	name := p.Name
	if name == "" {
		name = p.GenerateName + "*"
	}
	return p.Namespace + "/" + name
}

// claimTemplateOf is the template pod's ClaimName claim names ("" none).
func claimTemplateOf(pod *corev1.Pod) string {
	for _, c := range pod.Spec.ResourceClaims {
		if c.Name == ClaimName && c.ResourceClaimTemplateName != nil {
			return *c.ResourceClaimTemplateName
		}
	}
	return ""
}
