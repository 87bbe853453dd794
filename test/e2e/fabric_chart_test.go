//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/railyard-io/railyard/internal/helmchart"
	"github.com/railyard-io/railyard/test/e2e/framework"
)

// TestFabricNodePolicyKeepsPublisherToItsNodeAndKeys: the chart's
// fabric objects (templates/fabric.yaml's and fabric-units.yaml's
// cluster-scoped ones: the ClusterRoles, their bindings and the
// ValidatingAdmissionPolicies) stored on the real kube-apiserver let
// `railyard fabric publish`'s service account patch the fabric labels and
// annotation of the node its token names, and deny it another node, any
// other label or annotation, a finalizer, an owner, the spec, and a token
// naming no node; they let the unit writer's service account patch the
// unit label and nothing else; an administrator is not the policies'
// business. internal/helmchart's TestFabricPoliciesKeepEachWriterToItsKeysCEL
// evaluates the same policies with the apiserver's CEL library. The patches are server-side dry runs made as the
// service account by impersonation, with the node-name extra a
// kubelet-bound pod token carries (this cluster's static tokens carry
// none); the DaemonSet's pod itself is not run here.
func TestFabricNodePolicyKeepsPublisherToItsNodeAndKeys(t *testing.T) {
	c := suite.Cluster(t)
	ctx := framework.Context(t, 2*time.Minute)
	objs := renderFabricPolicyObjects(t)
	remove, err := c.Apply(ctx, objs)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := remove(context.Background()); err != nil {
			t.Error(err)
		}
	})
	as := func(node string) kubernetes.Interface {
		cs, err := c.AsServiceAccount("railyard-system", "railyard-fabric", node)
		if err != nil {
			t.Fatal(err)
		}
		return cs
	}
	admin, err := kubernetes.NewForConfig(c.RESTConfig)
	if err != nil {
		t.Fatal(err)
	}
	patch := func(cs kubernetes.Interface, p map[string]any) error {
		b, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		_, err = cs.CoreV1().Nodes().Patch(ctx, c.NodeName, types.MergePatchType, b, metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}})
		return err
	}
	labels := func(kv map[string]any) map[string]any {
		return map[string]any{"metadata": map[string]any{"labels": kv}}
	}
	fabricPatch := map[string]any{"metadata": map[string]any{
		"labels":      map[string]any{"rail.railyard.io/0": "leaf-0", "railyard.io/leaf-set": "ls-0123456789ab"},
		"annotations": map[string]any{"railyard.io/fabric-ports": `[{"rail":0,"nic":"mlx5_0","switch":"leaf-0"}]`},
	}}

	// The policy holds once the apiserver's admission has loaded it.
	otherNode := "may write only its own Node"
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := patch(as("some-other-node"), fabricPatch)
		if err != nil && strings.Contains(err.Error(), otherNode) {
			if !apierrors.IsInvalid(err) && !apierrors.IsForbidden(err) {
				t.Errorf("denial is %v, want Invalid or Forbidden", err)
			}
			break
		}
		if err != nil && !apierrors.IsForbidden(err) {
			t.Fatalf("another node's publisher patching %s: %v (want the policy's denial)", c.NodeName, err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("another node's publisher may still patch %s 30 s after the policy was stored (last: %v)", c.NodeName, err)
		}
		time.Sleep(250 * time.Millisecond)
	}
	if err := patch(as(c.NodeName), fabricPatch); err != nil {
		t.Errorf("the publisher of %s patching its fabric labels and annotation: %v", c.NodeName, err)
	}
	if err := patch(as(c.NodeName), labels(map[string]any{"rail.railyard.io/7": nil})); err != nil {
		t.Errorf("the publisher removing a fabric label: %v", err)
	}
	units, err := c.AsServiceAccount("railyard-system", "railyard-fabric-units", "")
	if err != nil {
		t.Fatal(err)
	}
	if err := patch(units, labels(map[string]any{"railyard.io/fabric-unit": "su1-leaf0"})); err != nil {
		t.Errorf("the unit writer labelling %s with its unit: %v", c.NodeName, err)
	}
	for _, tc := range []struct {
		name  string
		cs    kubernetes.Interface
		patch map[string]any
		want  string
	}{
		{"another label", as(c.NodeName), labels(map[string]any{"node-role.kubernetes.io/control-plane": ""}), "only the rail.railyard.io/*, railyard.io/leaf-set and railyard.io/degraded-rails labels"},
		{"the unit label", as(c.NodeName), labels(map[string]any{"railyard.io/fabric-unit": "su9-leaf0"}), "only the rail.railyard.io/*"},
		{"another annotation", as(c.NodeName), map[string]any{"metadata": map[string]any{"annotations": map[string]any{"x": "y"}}}, "only the railyard.io/fabric-ports annotation"},
		{"a finalizer", as(c.NodeName), map[string]any{"metadata": map[string]any{"finalizers": []string{"example.com/never-deleted"}}}, "may not change a Node's finalizers"},
		{"an owner", as(c.NodeName), map[string]any{"metadata": map[string]any{"ownerReferences": []map[string]any{{"apiVersion": "v1", "kind": "Namespace", "name": "default", "uid": "0123"}}}}, "may not change a Node's owner references"},
		{"the spec", as(c.NodeName), map[string]any{"spec": map[string]any{"unschedulable": true}}, "may not change a Node's spec"},
		{"token without a node", as(""), fabricPatch, "token names no node"},
		{"the unit writer: the leaf set", units, labels(map[string]any{"railyard.io/leaf-set": "ls-other"}), "may change only the railyard.io/fabric-unit label"},
		{"the unit writer: an annotation", units, map[string]any{"metadata": map[string]any{"annotations": map[string]any{"railyard.io/fabric-ports": "[]"}}}, "may not change a Node's annotations"},
		{"the unit writer: a finalizer", units, map[string]any{"metadata": map[string]any{"finalizers": []string{"example.com/never-deleted"}}}, "may not change a Node's finalizers"},
	} {
		err := patch(tc.cs, tc.patch)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want a denial saying %q", tc.name, err, tc.want)
		}
	}
	if err := patch(admin, labels(map[string]any{"example.com/any": "x"})); err != nil {
		t.Errorf("an administrator labelling the node: %v (the policy matches the publisher only)", err)
	}
}

// renderFabricPolicyObjects renders the chart with fabric.enabled and
// fabric.units.enabled and returns what templates/fabric.yaml and
// fabric-units.yaml make but their DaemonSet, Deployment and service
// accounts.
func renderFabricPolicyObjects(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	repo, err := framework.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	ch, err := helmchart.Load(filepath.Join(repo, "deploy/helm/railyard"))
	if err != nil {
		t.Fatal(err)
	}
	ms, err := helmchart.Render(ch, helmchart.Options{Release: "railyard", Namespace: "railyard-system",
		Values: map[string]any{"fabric": map[string]any{"enabled": true, "units": map[string]any{"enabled": true}}}})
	if err != nil {
		t.Fatal(err)
	}
	var stream []byte
	for _, m := range ms {
		if m.Source == "railyard/templates/fabric.yaml" || m.Source == "railyard/templates/fabric-units.yaml" {
			stream = append(stream, []byte("---\n"+m.Content+"\n")...)
		}
	}
	objs, err := framework.DecodeObjects(stream)
	if err != nil {
		t.Fatal(err)
	}
	var out []*unstructured.Unstructured
	kinds := map[string]bool{}
	for _, o := range objs {
		kinds[o.GetKind()] = true
		// Cluster-scoped objects only: impersonation needs no service
		// account object, and a namespace this cluster (no namespace
		// controller) could not delete would outlive the test.
		if o.GetNamespace() == "" && o.GetKind() != "DaemonSet" && o.GetKind() != "Deployment" && o.GetKind() != "ServiceAccount" {
			out = append(out, o)
		}
	}
	for _, k := range []string{"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding", "DaemonSet"} {
		if !kinds[k] {
			t.Fatalf("templates/fabric.yaml renders no %s (%v)", k, kinds)
		}
	}
	return out
}
