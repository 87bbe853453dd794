package helmchart

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"
)

func TestFabricIsOffByDefault(t *testing.T) {
	t.Parallel()
	_, o := render(t, nil)
	var ds appsv1.DaemonSet
	if o.byComponent(t, "DaemonSet", "fabric", &ds) {
		t.Error("the fabric DaemonSet renders without fabric.enabled")
	}
}

func TestFabricDaemonSetHasHostNetworkAndNetRawOnly(t *testing.T) {
	t.Parallel()
	_, o := render(t, map[string]any{"fabric": map[string]any{"enabled": true, "wait": "40s", "interval": "10m"}})
	var ds appsv1.DaemonSet
	if !o.byComponent(t, "DaemonSet", "fabric", &ds) {
		t.Fatal("no fabric DaemonSet")
	}
	spec := ds.Spec.Template.Spec
	if !spec.HostNetwork {
		t.Error("the fabric DaemonSet must use the host's network namespace to hear LLDP on the NICs")
	}
	if spec.ServiceAccountName != "railyard-fabric" {
		t.Errorf("service account %q, want its own (the admission policy matches it)", spec.ServiceAccountName)
	}
	c := spec.Containers[0]
	wantCmd := []string{"/usr/local/bin/railyard", "fabric", "publish", "--watch", "--sysfs=/host/sys", "--wait=40s", "--interval=10m"}
	if diff := cmp.Diff(wantCmd, c.Command); diff != "" {
		t.Errorf("command (-want +got):\n%s", diff)
	}
	sc := c.SecurityContext
	if sc == nil || (sc.Privileged != nil && *sc.Privileged) || sc.Capabilities == nil ||
		!cmp.Equal(sc.Capabilities.Add, []corev1.Capability{"NET_RAW"}) || !slices.Contains(sc.Capabilities.Drop, "ALL") {
		t.Errorf("security context %+v: want unprivileged, ALL dropped, NET_RAW added", sc)
	}
	for _, m := range c.VolumeMounts {
		if !m.ReadOnly {
			t.Errorf("mount %s is writable", m.MountPath)
		}
	}
}

func TestFabricRBACAndOwnNodePolicy(t *testing.T) {
	t.Parallel()
	_, o := render(t, map[string]any{"fabric": map[string]any{"enabled": true}})
	var role rbacv1.ClusterRole
	found := false
	for _, doc := range o.byKind["ClusterRole"] {
		if strings.Contains(doc, "name: railyard-fabric\n") {
			found = true
			if err := yaml.UnmarshalStrict([]byte(doc), &role); err != nil {
				t.Fatal(err)
			}
		}
	}
	if !found {
		t.Fatal("no railyard-fabric ClusterRole")
	}
	want := []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get", "patch"}}}
	if diff := cmp.Diff(want, role.Rules); diff != "" {
		t.Errorf("rules (-want +got):\n%s", diff)
	}
	var vap admissionv1.ValidatingAdmissionPolicy
	found = false
	for _, doc := range o.byKind["ValidatingAdmissionPolicy"] {
		if strings.Contains(doc, "railyard-fabric-own-node") {
			found = true
			if err := yaml.UnmarshalStrict([]byte(doc), &vap); err != nil {
				t.Fatal(err)
			}
		}
	}
	if !found {
		t.Fatal("no own-node ValidatingAdmissionPolicy for the fabric service account")
	}
	if !strings.Contains(vap.Spec.MatchConditions[0].Expression, "system:serviceaccount:railyard-system:railyard-fabric") {
		t.Errorf("the policy matches %q, not the fabric service account", vap.Spec.MatchConditions[0].Expression)
	}

	_, o = render(t, map[string]any{"fabric": map[string]any{"enabled": true, "restrictToOwnNode": false}})
	for _, doc := range o.byKind["ValidatingAdmissionPolicy"] {
		if strings.Contains(doc, "railyard-fabric") {
			t.Error("restrictToOwnNode: false still renders the policy")
		}
	}
}
