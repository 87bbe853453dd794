package helmchart

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"helm.sh/helm/v3/pkg/chartutil"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/yaml"

	"github.com/railyard-io/railyard/api/config/v1alpha1"
	"github.com/railyard-io/railyard/internal/dra"
)

// hasDRA says whether the rendered agent configuration has a pool with
// delivery dra (read with the agent's own loader).
func hasDRA(t *testing.T, objs objects) bool {
	t.Helper()
	cfg, err := v1alpha1.Parse([]byte(objs.configMap(t).Data["config.yaml"]))
	if err != nil {
		t.Fatalf("the ConfigMap does not load: %v", err)
	}
	for _, p := range cfg.Pools {
		if p.Delivery == v1alpha1.DeliveryDRA {
			return true
		}
	}
	return false
}

func draVariant(t *testing.T) map[string]any {
	t.Helper()
	for _, v := range variants() {
		if v.name == "dra" {
			return v.values
		}
	}
	t.Fatal("no dra variant")
	return nil
}

// TestDRARendersDeviceClassRBACAndPolicy: a pool with delivery dra renders
// Railyard's DeviceClass exactly as internal/dra makes it, a ClusterRole
// with exactly what the kubeletplugin helper calls, bound to the agent's
// service account, and the policy keeping the agent to its own node's
// slices (unless turned off); without one none of it is rendered.
func TestDRARendersDeviceClassRBACAndPolicy(t *testing.T) {
	_, none := render(t, nil)
	for _, k := range []string{"DeviceClass", "ClusterRole", "ClusterRoleBinding", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"} {
		if len(none.byKind[k]) != 0 {
			t.Errorf("the default values render a %s", k)
		}
	}

	vals := draVariant(t)
	_, objs := render(t, vals)
	// Railyard's DeviceClass, then one per DRA pool, each exactly as
	// internal/dra makes them.
	wants := []*resourceapi.DeviceClass{dra.DeviceClass()}
	for _, p := range vals["config"].(map[string]any)["pools"].([]any) {
		if pm := p.(map[string]any); pm["delivery"] == "dra" {
			wants = append(wants, dra.PoolDeviceClass(pm["name"].(string)))
		}
	}
	docs := objs.byKind["DeviceClass"]
	if len(docs) != len(wants) || len(wants) < 2 {
		t.Fatalf("%d DeviceClasses rendered, want %d (Railyard's and one per DRA pool)", len(docs), len(wants))
	}
	for i, want := range wants {
		var dc resourceapi.DeviceClass
		if err := yaml.UnmarshalStrict([]byte(docs[i]), &dc); err != nil {
			t.Fatal(err)
		}
		if dc.Name != want.Name || !equality.Semantic.DeepEqual(dc.Spec, want.Spec) {
			t.Errorf("DeviceClass %s %+v, want %s %+v", dc.Name, dc.Spec, want.Name, want.Spec)
		}
	}

	var role rbacv1.ClusterRole
	objs.one(t, "ClusterRole", &role)
	wantRules := []rbacv1.PolicyRule{
		{APIGroups: []string{"resource.k8s.io"}, Resources: []string{"resourceslices"}, Verbs: []string{"list", "watch", "create", "update", "delete"}},
		{APIGroups: []string{"resource.k8s.io"}, Resources: []string{"resourceclaims"}, Verbs: []string{"get"}},
		// The claims' status.devices (draplugin.SyncStatus), and the
		// granular check the 1.36+ API server makes for it.
		{APIGroups: []string{"resource.k8s.io"}, Resources: []string{"resourceclaims/status"}, Verbs: []string{"update"}},
		{APIGroups: []string{"resource.k8s.io"}, Resources: []string{"resourceclaims/" + resourceapi.SubresourceDriver},
			ResourceNames: []string{dra.DriverName}, Verbs: []string{resourceapi.VerbPrefixAssociatedNode + "update"}},
		{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get", "list", "watch"}},
	}
	if diff := cmp.Diff(wantRules, role.Rules); diff != "" {
		t.Errorf("ClusterRole rules (-want +got):\n%s", diff)
	}
	var binding rbacv1.ClusterRoleBinding
	objs.one(t, "ClusterRoleBinding", &binding)
	sa := objs.daemonSet(t).Spec.Template.Spec.ServiceAccountName
	if binding.RoleRef.Name != role.Name || binding.RoleRef.Kind != "ClusterRole" {
		t.Errorf("ClusterRoleBinding role %+v, want %s", binding.RoleRef, role.Name)
	}
	if diff := cmp.Diff([]rbacv1.Subject{{Kind: "ServiceAccount", Name: sa, Namespace: "railyard-system"}}, binding.Subjects); diff != "" {
		t.Errorf("ClusterRoleBinding subjects (-want +got):\n%s", diff)
	}

	var vap admissionv1.ValidatingAdmissionPolicy
	objs.one(t, "ValidatingAdmissionPolicy", &vap)
	var vapb admissionv1.ValidatingAdmissionPolicyBinding
	objs.one(t, "ValidatingAdmissionPolicyBinding", &vapb)
	if vapb.Spec.PolicyName != vap.Name {
		t.Errorf("policy binding %+v for policy %s", vapb.Spec, vap.Name)
	}
	if diff := cmp.Diff([]admissionv1.ValidationAction{admissionv1.Deny}, vapb.Spec.ValidationActions); diff != "" {
		t.Errorf("policy binding actions (-want +got):\n%s", diff)
	}
	if len(vap.Spec.MatchConditions) != 1 || vap.Spec.MatchConditions[0].Expression != `request.userInfo.username == "system:serviceaccount:railyard-system:`+sa+`"` {
		t.Errorf("policy applies to %+v, want the agent's service account only", vap.Spec.MatchConditions)
	}

	values := draVariant(t)
	values["dra"] = map[string]any{"restrictSlicesToNode": false}
	_, off := render(t, values)
	if len(off.byKind["ValidatingAdmissionPolicy"]) != 0 || len(off.byKind["ClusterRole"]) != 1 {
		t.Errorf("restrictSlicesToNode false: %d policies, %d roles", len(off.byKind["ValidatingAdmissionPolicy"]), len(off.byKind["ClusterRole"]))
	}
}

// The chart's kubeVersion is the version matrix's oldest release and
// newer: helm install refuses an older cluster instead of failing later.
func TestChartKubeVersionIsTheMatrix(t *testing.T) {
	kv := loadChart(t).Metadata.KubeVersion
	for ver, ok := range map[string]bool{"v1.35.8": true, "v1.37.2": true, "v1.34.9": false, "v1.26.0": false} {
		if chartutil.IsCompatibleRange(kv, ver) != ok {
			t.Errorf("kubeVersion %q accepts %s: %v, want %v", kv, ver, !ok, ok)
		}
	}
}
