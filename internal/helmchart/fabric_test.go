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
