package helmchart

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

func railsController(extra map[string]any) map[string]any {
	rc := map[string]any{"enabled": true}
	for k, v := range extra {
		rc[k] = v
	}
	return map[string]any{"rails": map[string]any{"controller": rc}}
}

func TestRailsControllerIsOffByDefault(t *testing.T) {
	t.Parallel()
	_, o := render(t, nil)
	if len(o.byKind["MutatingWebhookConfiguration"]) != 0 {
		t.Error("a MutatingWebhookConfiguration renders without rails.controller.enabled")
	}
	var d appsv1.Deployment
	if o.byComponent(t, "Deployment", "rails-controller", &d) {
		t.Error("the rails controller renders without rails.controller.enabled")
	}
}

func TestRailsControllerRendersMatchGoldenFile(t *testing.T) {
	t.Parallel()
	ms, _ := render(t, railsController(map[string]any{"failurePolicy": "Ignore", "rechooseAfter": "5m",
		"tolerations": []any{"rdma.railyard.io/unhealthy:NoSchedule"}}))
	golden(t, "rails-controller", Stream(ms))
}

func TestRailsControllerWebhookReachesOnlyLabelledPodsAtCreate(t *testing.T) {
	t.Parallel()
	for _, policy := range []string{"Fail", "Ignore"} {
		values := railsController(map[string]any{"failurePolicy": policy})
		if policy == "Fail" {
			values = railsController(nil) // the default
		}
		_, o := render(t, values)
		var cfg admissionv1.MutatingWebhookConfiguration
		o.one(t, "MutatingWebhookConfiguration", &cfg)
		if len(cfg.Webhooks) != 1 {
			t.Fatalf("%d webhooks", len(cfg.Webhooks))
		}
		w := cfg.Webhooks[0]
		if w.FailurePolicy == nil || string(*w.FailurePolicy) != policy {
			t.Errorf("failurePolicy %v, want %s", w.FailurePolicy, policy)
		}
		if diff := cmp.Diff(&metav1.LabelSelector{MatchLabels: map[string]string{"railyard.io/rails": "same"}}, w.ObjectSelector); diff != "" {
			t.Errorf("objectSelector (-want +got):\n%s", diff)
		}
		want := []admissionv1.RuleWithOperations{{Operations: []admissionv1.OperationType{admissionv1.Create},
			Rule: admissionv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}, Scope: ptrTo(admissionv1.NamespacedScope)}}}
		if diff := cmp.Diff(want, w.Rules); diff != "" {
			t.Errorf("rules (-want +got):\n%s", diff)
		}
		if s := w.ClientConfig.Service; s == nil || s.Name != "railyard-rails-controller" || s.Namespace != "railyard-system" || s.Path == nil || *s.Path != "/mutate-pods" {
			t.Errorf("service %+v", s)
		}
		if w.SideEffects == nil || *w.SideEffects != admissionv1.SideEffectClassNoneOnDryRun {
			t.Errorf("sideEffects %v", w.SideEffects)
		}
	}
}

func TestRailsControllerRBACIsLeastPrivilege(t *testing.T) {
	t.Parallel()
	_, o := render(t, railsController(nil))
	role := func(kind string) []rbacv1.PolicyRule {
		for _, doc := range o.byKind[kind] {
			if strings.Contains(doc, "name: railyard-rails-controller\n") {
				var r rbacv1.ClusterRole
				if err := yaml.UnmarshalStrict([]byte(doc), &r); err != nil {
					t.Fatal(err)
				}
				return r.Rules
			}
		}
		t.Fatalf("no %s railyard-rails-controller", kind)
		return nil
	}
	wantCluster := []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"list", "delete"}},
		{APIGroups: []string{"batch"}, Resources: []string{"jobs"}, Verbs: []string{"get"}},
		{APIGroups: []string{"scheduling.k8s.io"}, Resources: []string{"podgroups"}, Verbs: []string{"get"}},
		{APIGroups: []string{"resource.k8s.io"}, Resources: []string{"resourceclaimtemplates"}, Verbs: []string{"get", "list", "create", "delete"}},
		{APIGroups: []string{"resource.k8s.io"}, Resources: []string{"resourceslices", "resourceclaims", "devicetaintrules"}, Verbs: []string{"list"}},
		{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create"}},
		{APIGroups: []string{"admissionregistration.k8s.io"}, Resources: []string{"mutatingwebhookconfigurations"}, ResourceNames: []string{"railyard-rails"}, Verbs: []string{"get", "patch"}},
	}
	if diff := cmp.Diff(wantCluster, role("ClusterRole")); diff != "" {
		t.Errorf("ClusterRole (-want +got):\n%s", diff)
	}
	wantNS := []rbacv1.PolicyRule{
		{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"create"}},
		{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, ResourceNames: []string{"railyard-rails-controller"}, Verbs: []string{"get", "update"}},
	}
	if diff := cmp.Diff(wantNS, role("Role")); diff != "" {
		t.Errorf("Role (-want +got):\n%s", diff)
	}
	var d appsv1.Deployment
	if !o.byComponent(t, "Deployment", "rails-controller", &d) {
		t.Fatal("no rails-controller Deployment")
	}
	spec := d.Spec.Template.Spec
	if *d.Spec.Replicas != 1 || spec.ServiceAccountName != "railyard-rails-controller" || spec.HostNetwork {
		t.Errorf("replicas %d account %s hostNetwork %v", *d.Spec.Replicas, spec.ServiceAccountName, spec.HostNetwork)
	}
	c := spec.Containers[0]
	if c.SecurityContext == nil || c.SecurityContext.ReadOnlyRootFilesystem == nil || !*c.SecurityContext.ReadOnlyRootFilesystem || spec.SecurityContext.RunAsNonRoot == nil || !*spec.SecurityContext.RunAsNonRoot {
		t.Errorf("security context %+v %+v", c.SecurityContext, spec.SecurityContext)
	}
}

func TestRailsControllerValuesAreChecked(t *testing.T) {
	t.Parallel()
	for _, bad := range []map[string]any{
		railsController(map[string]any{"failurePolicy": "Maybe"}),
		railsController(map[string]any{"rechooseAfter": "soon"}),
		railsController(map[string]any{"timeoutSeconds": 60}),
		railsController(map[string]any{"unknown": true}),
	} {
		if _, err := Render(loadChart(t), Options{Release: "railyard", Namespace: "railyard-system", Values: bad}); err == nil {
			t.Errorf("%v rendered", bad)
		}
	}
}

func ptrTo[T any](v T) *T { return &v }

func TestRailsControllerHelmLintFindsNoProblem(t *testing.T) {
	t.Parallel()
	for _, m := range Lint(chartDir, "railyard-system", railsController(nil)) {
		if m.Severity != "INFO" {
			t.Error(m)
		}
	}
}
