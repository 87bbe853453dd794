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

	"github.com/railyard-io/railyard/internal/image"
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
	wantCmd := []string{"/usr/local/bin/railyard", "fabric", "publish", "--watch", "--sysfs=/host/sys", "--wait=40s", "--interval=10m",
		"--hold-rounds=3", "--leaf-set-label=railyard.io/leaf-set"}
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

// TestFabricInfinibandRunsTheDiagsImagePrivilegedWithTheUmadDevices: with
// fabric.infiniband.enabled the fabric container runs the image
// hack/image --infiniband-diags tags, privileged (the only way the chart
// can let it open the host's umad devices), as root, with the node's
// /dev/infiniband read-write; without it, nothing of that renders.
func TestFabricInfinibandRunsTheDiagsImagePrivilegedWithTheUmadDevices(t *testing.T) {
	t.Parallel()
	ch := loadChart(t)
	fabricContainer := func(t *testing.T, values map[string]any) (corev1.PodSpec, corev1.Container) {
		t.Helper()
		_, o := render(t, values)
		var ds appsv1.DaemonSet
		if !o.byComponent(t, "DaemonSet", "fabric", &ds) {
			t.Fatal("no fabric DaemonSet")
		}
		return ds.Spec.Template.Spec, ds.Spec.Template.Spec.Containers[0]
	}
	ib := func(extra map[string]any) map[string]any {
		v := map[string]any{"fabric": map[string]any{"enabled": true, "infiniband": map[string]any{"enabled": true}}}
		for k, x := range extra {
			v[k] = x
		}
		return v
	}

	spec, c := fabricContainer(t, ib(nil))
	if want := "ghcr.io/railyard-io/railyard:" + ch.Metadata.AppVersion + image.InfinibandDiagsTagSuffix; c.Image != want {
		t.Errorf("image %q, want %q (hack/image --infiniband-diags)", c.Image, want)
	}
	sc := c.SecurityContext
	if sc == nil || sc.Privileged == nil || !*sc.Privileged || sc.RunAsUser == nil || *sc.RunAsUser != 0 ||
		sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem || sc.AllowPrivilegeEscalation != nil || sc.Capabilities != nil {
		t.Errorf("security context %+v: want privileged, uid 0, read-only root, and no capability list (privileged has all)", sc)
	}
	if !spec.HostNetwork {
		t.Error("no host network: the RDMA devices of the host's namespace are what smpquery opens")
	}
	mounts := map[string]corev1.VolumeMount{}
	for _, m := range c.VolumeMounts {
		mounts[m.Name] = m
	}
	if m, ok := mounts["dev-infiniband"]; !ok || m.MountPath != "/dev/infiniband" || m.ReadOnly {
		t.Errorf("mount of /dev/infiniband %+v: want the node's, read-write (umad devices are opened O_RDWR)", m)
	}
	if m := mounts["sys"]; !m.ReadOnly {
		t.Error("sysfs is mounted writable")
	}
	for _, v := range spec.Volumes {
		if v.Name == "dev-infiniband" && (v.HostPath == nil || v.HostPath.Path != "/dev/infiniband") {
			t.Errorf("volume %+v", v)
		}
	}

	// The agent stays unprivileged.
	_, o := render(t, ib(nil))
	if asc := o.daemonSet(t).Spec.Template.Spec.Containers[0].SecurityContext; asc == nil || asc.Privileged == nil || *asc.Privileged {
		t.Errorf("the agent's security context changed: %+v", asc)
	}

	// The tag follows image.tag; image.digest is the plain image's and
	// never used; a digest of its own is.
	digest := "sha256:" + strings.Repeat("cd", 32)
	for _, tc := range []struct {
		values map[string]any
		want   string
	}{
		{ib(map[string]any{"image": map[string]any{"repository": "registry.example/railyard", "tag": "1.2.3", "digest": "sha256:" + strings.Repeat("ab", 32)}}),
			"registry.example/railyard:1.2.3-infiniband-diags"},
		{map[string]any{"fabric": map[string]any{"enabled": true, "infiniband": map[string]any{"enabled": true,
			"image": map[string]any{"repository": "mirror.example/railyard-ib", "digest": digest}}}},
			"mirror.example/railyard-ib@" + digest},
		{map[string]any{"fabric": map[string]any{"enabled": true, "infiniband": map[string]any{"enabled": true,
			"image": map[string]any{"tag": "custom"}}}},
			"ghcr.io/railyard-io/railyard:custom"},
	} {
		if _, c := fabricContainer(t, tc.values); c.Image != tc.want {
			t.Errorf("%v: image %q, want %q", tc.values, c.Image, tc.want)
		}
	}

	// The schema refuses what the template would render wrong.
	for _, bad := range []map[string]any{
		{"enabled": "yes"},
		{"enabled": true, "image": map[string]any{"digest": "sha256:abc"}},
		{"enabled": true, "privileged": false},
	} {
		v := map[string]any{"fabric": map[string]any{"enabled": true, "infiniband": bad}}
		if _, err := Render(ch, Options{Release: "r", Namespace: "n", Values: v}); err == nil || !strings.Contains(err.Error(), "/fabric/infiniband") {
			t.Errorf("fabric.infiniband %v: %v, want refused by the schema", bad, err)
		}
	}

	// Off (the default), the container is the unprivileged one.
	_, c = fabricContainer(t, map[string]any{"fabric": map[string]any{"enabled": true}})
	for _, m := range c.VolumeMounts {
		if m.Name == "dev-infiniband" {
			t.Error("/dev/infiniband mounted without fabric.infiniband.enabled")
		}
	}
	if strings.HasSuffix(c.Image, image.InfinibandDiagsTagSuffix) {
		t.Errorf("image %q without fabric.infiniband.enabled", c.Image)
	}
}

// fabricUnits renders the chart and returns the unit writer's Deployment,
// ClusterRole and the unit label policy's CEL (false without them).
func fabricUnits(t *testing.T, values map[string]any) (appsv1.Deployment, rbacv1.ClusterRole, string, bool) {
	t.Helper()
	_, o := render(t, values)
	var d appsv1.Deployment
	if !o.byComponent(t, "Deployment", "fabric-units", &d) {
		return d, rbacv1.ClusterRole{}, "", false
	}
	var role rbacv1.ClusterRole
	for _, doc := range o.byKind["ClusterRole"] {
		if strings.Contains(doc, "name: railyard-fabric-units\n") {
			if err := yaml.UnmarshalStrict([]byte(doc), &role); err != nil {
				t.Fatal(err)
			}
		}
	}
	policy := ""
	for _, doc := range o.byKind["ValidatingAdmissionPolicy"] {
		if strings.Contains(doc, "railyard-fabric-units-unit-label") {
			policy = doc
		}
	}
	return d, role, policy, true
}

// The unit writer is off unless fabric.units.enabled; on, it is one
// replica (replaced, never two at once) of `railyard fabric label-units`
// under its own service account, which may list and patch nodes
// only, unprivileged, and the policy binds it to the unit label key its
// command writes.
func TestFabricUnitsWriterIsOneUnprivilegedReplica(t *testing.T) {
	t.Parallel()
	if _, _, _, ok := fabricUnits(t, map[string]any{"fabric": map[string]any{"enabled": true}}); ok {
		t.Error("the unit writer renders without fabric.units.enabled")
	}
	if _, _, _, ok := fabricUnits(t, map[string]any{"fabric": map[string]any{"units": map[string]any{"enabled": true}}}); ok {
		t.Error("the unit writer renders without fabric.enabled")
	}
	d, role, policy, ok := fabricUnits(t, map[string]any{"fabric": map[string]any{"enabled": true, "units": map[string]any{"enabled": true, "interval": "2m"}}})
	if !ok {
		t.Fatal("no fabric-units Deployment")
	}
	if d.Spec.Replicas == nil || *d.Spec.Replicas != 1 || d.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType {
		t.Errorf("replicas %v, strategy %q: want 1, Recreate", d.Spec.Replicas, d.Spec.Strategy.Type)
	}
	spec := d.Spec.Template.Spec
	if spec.ServiceAccountName != "railyard-fabric-units" || spec.HostNetwork {
		t.Errorf("service account %q, host network %v", spec.ServiceAccountName, spec.HostNetwork)
	}
	c := spec.Containers[0]
	wantCmd := []string{"/usr/local/bin/railyard", "fabric", "label-units", "--watch", "--interval=2m", "--unit-label=railyard.io/fabric-unit"}
	if diff := cmp.Diff(wantCmd, c.Command); diff != "" {
		t.Errorf("command (-want +got):\n%s", diff)
	}
	sc := c.SecurityContext
	if sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation || sc.Capabilities == nil ||
		!cmp.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) != 0 ||
		spec.SecurityContext == nil || spec.SecurityContext.RunAsNonRoot == nil || !*spec.SecurityContext.RunAsNonRoot {
		t.Errorf("security context %+v, pod %+v: want non-root, no capabilities", sc, spec.SecurityContext)
	}
	want := []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"list", "patch"}}}
	if diff := cmp.Diff(want, role.Rules); diff != "" {
		t.Errorf("rules (-want +got):\n%s", diff)
	}
	if !strings.Contains(policy, "k == 'railyard.io/fabric-unit'") || !strings.Contains(policy, "system:serviceaccount:railyard-system:railyard-fabric-units") {
		t.Errorf("the unit label policy does not bind the writer to railyard.io/fabric-unit:\n%s", policy)
	}
}

// One value picks the keys: the publisher's --leaf-set-label and the
// writer's --unit-label are the keys the admission policies let them
// change, in the topograph scheme and with keys of one's own; keys the
// commands would refuse fail the rendering.
func TestFabricLabelKeysRenderFlagsAndPoliciesAlike(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		labels        map[string]any
		leafSet, unit string
	}{
		{map[string]any{"scheme": "topograph"}, "fabric.topograph.run/tier-0", "fabric.topograph.run/tier-1"},
		{map[string]any{"scheme": "railyard", "leafSet": "example.com/leaves", "unit": "example.com/pod"}, "example.com/leaves", "example.com/pod"},
		{map[string]any{"scheme": "topograph", "unit": "example.com/su"}, "fabric.topograph.run/tier-0", "example.com/su"},
	} {
		values := map[string]any{"fabric": map[string]any{"enabled": true, "labels": tc.labels, "units": map[string]any{"enabled": true}}}
		_, o := render(t, values)
		var ds appsv1.DaemonSet
		if !o.byComponent(t, "DaemonSet", "fabric", &ds) {
			t.Fatal("no fabric DaemonSet")
		}
		if cmd := ds.Spec.Template.Spec.Containers[0].Command; !slices.Contains(cmd, "--leaf-set-label="+tc.leafSet) {
			t.Errorf("%v: publisher %v, want --leaf-set-label=%s", tc.labels, cmd, tc.leafSet)
		}
		d, _, unitPolicy, _ := fabricUnits(t, values)
		if cmd := d.Spec.Template.Spec.Containers[0].Command; !slices.Contains(cmd, "--unit-label="+tc.unit) {
			t.Errorf("%v: writer %v, want --unit-label=%s", tc.labels, cmd, tc.unit)
		}
		if !strings.Contains(unitPolicy, "k == '"+tc.unit+"'") {
			t.Errorf("%v: the unit policy does not name %s", tc.labels, tc.unit)
		}
		for _, doc := range o.byKind["ValidatingAdmissionPolicy"] {
			if strings.Contains(doc, "railyard-fabric-own-node") && !strings.Contains(doc, "k == '"+tc.leafSet+"'") {
				t.Errorf("%v: the publisher's policy does not name %s", tc.labels, tc.leafSet)
			}
		}
	}

	ch := loadChart(t)
	for _, tc := range []struct {
		labels map[string]any
		want   string
	}{
		{map[string]any{"scheme": "volcano"}, "/fabric/labels/scheme"},
		{map[string]any{"leafSet": "no-prefix"}, "/fabric/labels/leafSet"},
		{map[string]any{"unit": "a b/c"}, "/fabric/labels/unit"},
		{map[string]any{"leafSet": "kubernetes.io/hostname"}, "a domain Kubernetes reserves"},
		{map[string]any{"unit": "node-role.kubernetes.io/gpu"}, "a domain Kubernetes reserves"},
		{map[string]any{"leafSet": "rail.railyard.io/0"}, "another fabric label's key"},
		{map[string]any{"scheme": "topograph", "unit": "fabric.topograph.run/tier-0"}, "want two keys"},
	} {
		v := map[string]any{"fabric": map[string]any{"enabled": true, "labels": tc.labels}}
		if _, err := Render(ch, Options{Release: "r", Namespace: "n", Values: v}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("fabric.labels %v: %v, want refused with %q", tc.labels, err, tc.want)
		}
	}
}
