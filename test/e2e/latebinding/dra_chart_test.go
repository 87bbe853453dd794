//go:build e2e

package latebinding

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/railyard-io/railyard/internal/helmchart"
	"github.com/railyard-io/railyard/test/e2e/framework"
)

// TestDRAChartObjectsPassServerDryRun: what the chart adds for a pool with
// delivery dra (templates/dra.yaml: the DeviceClass, the ClusterRole and
// its binding, the ValidatingAdmissionPolicy and its binding) passes the
// real kube-apiserver 1.35's validation and admission in a server-side
// dry run, which compiles the DeviceClass's and the policy's CEL. Nothing
// is stored. TestDRASlicePolicyKeepsAgentToItsNode checks what the policy
// denies.
func TestDRAChartObjectsPassServerDryRun(t *testing.T) {
	c := suite.Cluster(t)
	ctx := framework.Context(t, 2*time.Minute)
	objs := renderDRAChartObjects(t)
	kinds := map[string]bool{}
	for _, o := range objs {
		kinds[o.GetKind()] = true
	}
	for _, k := range []string{"DeviceClass", "ClusterRole", "ClusterRoleBinding", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"} {
		if !kinds[k] {
			t.Errorf("templates/dra.yaml renders no %s (%v)", k, kinds)
		}
	}
	results, err := c.DryRunApply(ctx, objs)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range results {
		if r.Err != nil {
			t.Errorf("%s %s: %v", objs[i].GetKind(), objs[i].GetName(), r.Err)
		}
	}
}

// TestDRASlicePolicyKeepsAgentToItsNode: the chart's
// ValidatingAdmissionPolicy, stored for real with the agent's ClusterRole
// and binding, lets the agent's service account write the ResourceSlices
// of the node its token names and denies it any other node's, cluster-wide
// ones, and a token naming no node; an administrator is not its business.
// The requests are server-side dry runs made as the agent's service
// account by impersonation, with the node-name extra a kubelet-bound pod
// token carries (ServiceAccountTokenPodNodeInfo): this cluster's static
// tokens carry no node, and impersonation is how the apiserver is told the
// same user information. The agent's DaemonSet pod itself is not run.
func TestDRASlicePolicyKeepsAgentToItsNode(t *testing.T) {
	c := suite.Cluster(t)
	ctx := framework.Context(t, 2*time.Minute)
	objs := renderDRAChartObjects(t)
	var stored []*unstructured.Unstructured
	sa := ""
	for _, o := range objs {
		switch o.GetKind() {
		case "DeviceClass":
			continue // the DRA tests of this suite own the class
		case "ClusterRoleBinding":
			subjects, _, _ := unstructured.NestedSlice(o.Object, "subjects")
			if len(subjects) == 1 {
				sa, _, _ = unstructured.NestedString(subjects[0].(map[string]any), "name")
			}
		}
		stored = append(stored, o)
	}
	if sa == "" {
		t.Fatal("the chart's ClusterRoleBinding names no single service account")
	}
	remove, err := c.Apply(ctx, stored)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := remove(context.Background()); err != nil {
			t.Error(err)
		}
	})
	as := func(node string) kubernetes.Interface {
		cs, err := c.AsServiceAccount("railyard-system", sa, node)
		if err != nil {
			t.Fatal(err)
		}
		return cs
	}
	admin, err := kubernetes.NewForConfig(c.RESTConfig)
	if err != nil {
		t.Fatal(err)
	}
	create := func(cs kubernetes.Interface, node string) error {
		s := &resourceapi.ResourceSlice{
			ObjectMeta: metav1.ObjectMeta{GenerateName: "policy-e2e-"},
			Spec: resourceapi.ResourceSliceSpec{
				Driver: "rdma.railyard.io",
				Pool:   resourceapi.ResourcePool{Name: "policy-e2e/rdma-vf", ResourceSliceCount: 1},
			},
		}
		if node == "" {
			s.Spec.AllNodes = ptr.To(true)
		} else {
			s.Spec.NodeName = ptr.To(node)
		}
		_, err := cs.ResourceV1().ResourceSlices().Create(ctx, s, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err
	}
	// The policy is enforced once the apiserver's admission has loaded it
	// (its informer): until then the other node's slice goes through.
	denied := "may write only the ResourceSlices of its node, not those of node-b"
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := create(as("node-a"), "node-b")
		if err != nil && strings.Contains(err.Error(), denied) {
			if !apierrors.IsInvalid(err) && !apierrors.IsForbidden(err) {
				t.Errorf("denial is %v, want Invalid or Forbidden", err)
			}
			break
		}
		if err != nil && !apierrors.IsNotFound(err) {
			t.Fatalf("the agent writing node-b's slice: %v (want the policy's denial)", err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("the agent of node-a may still write node-b's slice 30 s after the policy was stored (last: %v)", err)
		}
		time.Sleep(250 * time.Millisecond)
	}
	if err := create(as("node-a"), "node-a"); err != nil {
		t.Errorf("the agent of node-a writing its own node's slice: %v", err)
	}
	for _, tc := range []struct {
		name      string
		cs        kubernetes.Interface
		sliceNode string
		want      string
	}{
		{"cluster-wide slice", as("node-a"), "", "not cluster-wide ones"},
		{"token without a node", as(""), "node-a", "the agent's token names no node"},
	} {
		err := create(tc.cs, tc.sliceNode)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want a denial saying %q", tc.name, err, tc.want)
		}
	}
	if err := create(admin, "node-b"); err != nil {
		t.Errorf("an administrator writing node-b's slice: %v (the policy matches the agent only)", err)
	}
}

// renderDRAChartObjects renders the chart for one pool with delivery dra
// and returns what templates/dra.yaml makes.
func renderDRAChartObjects(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	repo, err := framework.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	ch, err := helmchart.Load(filepath.Join(repo, "deploy/helm/railyard"))
	if err != nil {
		t.Fatal(err)
	}
	ms, err := helmchart.Render(ch, helmchart.Options{Release: "railyard", Namespace: "railyard-system", Values: map[string]any{
		"config": map[string]any{"cdiSpecDir": "/var/run/cdi", "pools": []any{
			map[string]any{"name": "railyard.io/rdma_vf", "deviceKind": "vf", "delivery": "dra", "selectors": map[string]any{"vendors": []any{"15b3"}}},
		}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	var stream []byte
	for _, m := range ms {
		if m.Source == "railyard/templates/dra.yaml" {
			stream = append(stream, []byte("---\n"+m.Content+"\n")...)
		}
	}
	objs, err := framework.DecodeObjects(stream)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}
