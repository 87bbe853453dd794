package helmchart

import (
	"encoding/json"
	"maps"
	"path"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/railyard-io/railyard/api/config/v1alpha1"
	nodesetup "github.com/railyard-io/railyard/api/nodesetup/v1alpha1"
	cniconfig "github.com/railyard-io/railyard/internal/cni/config"
)

func TestRenderingsMatchGoldenFiles(t *testing.T) {
	for _, v := range variants() {
		t.Run(v.name, func(t *testing.T) {
			ms, _ := render(t, v.values)
			golden(t, v.name, Stream(ms))
		})
	}
}

func TestHelmLintFindsNoProblem(t *testing.T) {
	for _, v := range variants() {
		msgs := Lint(chartDir, "railyard-system", v.values)
		for _, m := range msgs {
			if m.Severity != "INFO" {
				t.Errorf("%s: %s", v.name, m)
			}
		}
	}
	// Lint does fail: a template that does not render is an ERROR.
	msgs := Lint(chartDir, "railyard-system", map[string]any{"config": map[string]any{"pools": "not a list"}})
	if !hasProblems(msgs) {
		t.Fatalf("lint of invalid values found nothing: %v", msgs)
	}
}

// TestEveryContainerIsUnprivilegedReadOnlyWithoutCapabilities checks the
// security settings docs/install.md promises, for every variant.
func TestEveryContainerIsUnprivilegedReadOnlyWithoutCapabilities(t *testing.T) {
	for _, v := range variants() {
		_, objs := render(t, v.values)
		ds := objs.daemonSet(t)
		spec := ds.Spec.Template.Spec
		if spec.HostNetwork || spec.HostPID || spec.HostIPC {
			t.Errorf("%s: host namespaces %v %v %v", v.name, spec.HostNetwork, spec.HostPID, spec.HostIPC)
		}
		// Only the DRA kubelet plugin, the job names and the pods' Events
		// call the API server.
		if want := hasDRA(t, objs) || v.name == "job-names" || v.name == "pod-events"; spec.AutomountServiceAccountToken == nil || *spec.AutomountServiceAccountToken != want {
			t.Errorf("%s: service account token mounted: %v, want %v (only with a dra pool, metrics.jobNames or cni.podEvents)", v.name, spec.AutomountServiceAccountToken, want)
		}
		if spec.SecurityContext == nil || spec.SecurityContext.SeccompProfile == nil || spec.SecurityContext.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
			t.Errorf("%s: pod seccomp %+v", v.name, spec.SecurityContext)
		}
		all := append(append([]corev1.Container{}, spec.InitContainers...), spec.Containers...)
		for _, c := range all {
			sc := c.SecurityContext
			if sc == nil || sc.Privileged == nil || *sc.Privileged || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
				sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem || sc.Capabilities == nil ||
				!cmp.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) != 0 ||
				sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault ||
				sc.RunAsUser == nil || *sc.RunAsUser != 0 {
				t.Errorf("%s: container %s security context %+v", v.name, c.Name, sc)
			}
			if !strings.HasPrefix(c.Command[0], "/usr/local/bin/railyard-") {
				t.Errorf("%s: container %s runs %v", v.name, c.Name, c.Command)
			}
		}
		for _, vol := range spec.Volumes {
			if vol.HostPath != nil && (vol.HostPath.Path == "/" || vol.HostPath.Path == "/dev" || vol.HostPath.Path == "/var/lib/kubelet") {
				t.Errorf("%s: broad hostPath %s", v.name, vol.HostPath.Path)
			}
		}
	}
}

type mount struct {
	path     string
	readOnly bool
}

// TestHostPathsAreExactlyThoseTheAgentConfigNames decodes the ConfigMap
// with the agent's own loader, derives the host paths the agent uses from
// the defaulted configuration, and compares with the DaemonSet's hostPath
// volumes and mounts (same path inside and out).
func TestHostPathsAreExactlyThoseTheAgentConfigNames(t *testing.T) {
	for _, v := range variants() {
		_, objs := render(t, v.values)
		cfg, err := v1alpha1.Parse([]byte(objs.configMap(t).Data["config.yaml"]))
		if err != nil {
			t.Fatalf("%s: the ConfigMap does not load: %v", v.name, err)
		}
		want := map[string]mount{
			cfg.SysfsRoot:                    {cfg.SysfsRoot, true},
			cfg.DevRoot + "/infiniband":      {cfg.DevRoot + "/infiniband", true},
			cfg.PluginDir:                    {cfg.PluginDir, false},
			path.Dir(cfg.PodResourcesSocket): {path.Dir(cfg.PodResourcesSocket), false},
			cfg.DevInfoDir:                   {cfg.DevInfoDir, false},
		}
		sandbox := false
		for _, p := range cfg.Pools {
			sandbox = sandbox || p.Binding == v1alpha1.BindingSandbox
		}
		dra := hasDRA(t, objs)
		if cfg.NCCLIBHCA == "merged" || sandbox || dra {
			want[cfg.StateDir] = mount{cfg.StateDir, false}
			if cfg.CDISpecDir != "" {
				want[cfg.CDISpecDir] = mount{cfg.CDISpecDir, false}
			}
		}
		if dra {
			// The DRA kubelet plugin's directories, as the agent gets them.
			env := map[string]string{}
			for _, e := range objs.daemonSet(t).Spec.Template.Spec.Containers[0].Env {
				env[e.Name] = e.Value
			}
			for _, k := range []string{"RAILYARD_DRA_PLUGIN_DIR", "RAILYARD_PLUGINS_REGISTRY_DIR"} {
				if env[k] == "" {
					t.Errorf("%s: no %s", v.name, k)
				}
				want[env[k]] = mount{env[k], false}
			}
		}
		// railyard-cni's state directory, read-only, as the agent gets it
		// (cni.podEvents).
		for _, e := range objs.daemonSet(t).Spec.Template.Spec.Containers[0].Env {
			if e.Name == "RAILYARD_CNI_STATE_DIR" {
				want[e.Value] = mount{e.Value, true}
			}
		}
		for _, f := range []string{cfg.GPUMap, cfg.NCCLTopologyFile} {
			if f != "" {
				want[path.Dir(f)] = mount{path.Dir(f), true}
			}
		}

		ds := objs.daemonSet(t)
		spec := ds.Spec.Template.Spec
		hostPaths := map[string]string{} // volume -> host path
		for _, vol := range spec.Volumes {
			if vol.HostPath != nil {
				hostPaths[vol.Name] = vol.HostPath.Path
			}
		}
		got := map[string]mount{}
		agent := spec.Containers[0]
		for _, m := range agent.VolumeMounts {
			hp, ok := hostPaths[m.Name]
			if !ok {
				if m.MountPath != "/etc/railyard-agent" {
					t.Errorf("%s: agent mount %s is neither a hostPath nor the config", v.name, m.MountPath)
				}
				continue
			}
			if hp != m.MountPath {
				t.Errorf("%s: host %s mounted at %s", v.name, hp, m.MountPath)
			}
			got[hp] = mount{hp, m.ReadOnly}
		}
		if diff := cmp.Diff(want, got, cmp.AllowUnexported(mount{})); diff != "" {
			t.Errorf("%s: agent host mounts (-want +got):\n%s", v.name, diff)
		}
		used := len(got)
		if len(spec.InitContainers) == 1 {
			ic := spec.InitContainers[0]
			if len(ic.VolumeMounts) != 1 || hostPaths[ic.VolumeMounts[0].Name] != "/opt/cni/bin" || ic.VolumeMounts[0].MountPath != "/host/opt/cni/bin" {
				t.Errorf("%s: installer mounts %+v", v.name, ic.VolumeMounts)
			}
			used++
		}
		if used != len(hostPaths) {
			t.Errorf("%s: %d hostPath volumes, %d used", v.name, len(hostPaths), used)
		}
	}
}

func TestNoRBACAndNoToken(t *testing.T) {
	_, objs := render(t, nil)
	for _, k := range []string{"Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding"} {
		if len(objs.byKind[k]) != 0 {
			t.Errorf("renders a %s: the agent uses no Kubernetes API", k)
		}
	}
	var sa corev1.ServiceAccount
	objs.one(t, "ServiceAccount", &sa)
	if sa.AutomountServiceAccountToken == nil || *sa.AutomountServiceAccountToken || sa.Name != objs.daemonSet(t).Spec.Template.Spec.ServiceAccountName {
		t.Fatalf("service account %+v", sa)
	}
}

// metrics.jobNames binds the agent's account list and watch on pods,
// nothing more, and mounts its token; with metrics off it renders nothing.
func TestJobNamesBindListAndWatchOnPods(t *testing.T) {
	_, objs := render(t, map[string]any{"metrics": map[string]any{"jobNames": true}})
	var role rbacv1.ClusterRole
	objs.one(t, "ClusterRole", &role)
	want := []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"list", "watch"}}}
	if diff := cmp.Diff(want, role.Rules); diff != "" {
		t.Errorf("ClusterRole rules (-want +got):\n%s", diff)
	}
	var binding rbacv1.ClusterRoleBinding
	objs.one(t, "ClusterRoleBinding", &binding)
	sa := objs.daemonSet(t).Spec.Template.Spec.ServiceAccountName
	if binding.RoleRef.Name != role.Name || cmp.Diff([]rbacv1.Subject{{Kind: "ServiceAccount", Name: sa, Namespace: "railyard-system"}}, binding.Subjects) != "" {
		t.Errorf("ClusterRoleBinding %+v %+v, want role %s for %s", binding.RoleRef, binding.Subjects, role.Name, sa)
	}
	if m := objs.daemonSet(t).Spec.Template.Spec.AutomountServiceAccountToken; m == nil || !*m {
		t.Errorf("token mounted: %v, want true", m)
	}
	_, off := render(t, map[string]any{"metrics": map[string]any{"jobNames": true, "enabled": false}})
	if len(off.byKind["ClusterRole"]) != 0 {
		t.Errorf("metrics off: %d ClusterRoles rendered, want none", len(off.byKind["ClusterRole"]))
	}
}

// cni.podEvents binds the agent's account create on events, nothing
// more, mounts its token and railyard-cni's state directory read-only.
func TestPodEventsBindCreateOnEvents(t *testing.T) {
	_, objs := render(t, map[string]any{"cni": map[string]any{"podEvents": true}})
	var role rbacv1.ClusterRole
	objs.one(t, "ClusterRole", &role)
	want := []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create"}}}
	if diff := cmp.Diff(want, role.Rules); diff != "" {
		t.Errorf("ClusterRole rules (-want +got):\n%s", diff)
	}
	var binding rbacv1.ClusterRoleBinding
	objs.one(t, "ClusterRoleBinding", &binding)
	spec := objs.daemonSet(t).Spec.Template.Spec
	if binding.RoleRef.Name != role.Name || cmp.Diff([]rbacv1.Subject{{Kind: "ServiceAccount", Name: spec.ServiceAccountName, Namespace: "railyard-system"}}, binding.Subjects) != "" {
		t.Errorf("ClusterRoleBinding %+v %+v, want role %s for %s", binding.RoleRef, binding.Subjects, role.Name, spec.ServiceAccountName)
	}
	if m := spec.AutomountServiceAccountToken; m == nil || !*m {
		t.Errorf("token mounted: %v, want true", m)
	}
	mounted := false
	for _, m := range spec.Containers[0].VolumeMounts {
		if m.MountPath == "/var/lib/cni/railyard" {
			mounted = m.ReadOnly
		}
	}
	if !mounted {
		t.Errorf("railyard-cni's state directory not mounted read-only in the agent: %+v", spec.Containers[0].VolumeMounts)
	}
	_, off := render(t, nil)
	if len(off.byKind["ClusterRole"]) != 0 {
		t.Errorf("cni.podEvents off: %d ClusterRoles rendered, want none", len(off.byKind["ClusterRole"]))
	}
}

// TestNetworksNameDefaultPoolsAndParseAsRailyardCNI: each example NAD
// names a pool of the default configuration, and its config, with the
// deviceID and pciBusID Multus adds, passes railyard-cni's own parser.
// nad is a rendered NetworkAttachmentDefinition with its config as
// railyard-cni parses it (deviceID set, as Multus does).
type nad struct {
	name, namespace, resource string
	conf                      map[string]any
	parsed                    *cniconfig.Config
}

func nads(t *testing.T, objs objects) []nad {
	t.Helper()
	var out []nad
	for _, doc := range objs.byKind["NetworkAttachmentDefinition"] {
		var raw struct {
			Metadata struct {
				Name        string
				Namespace   string
				Annotations map[string]string
			}
			Spec struct{ Config string }
		}
		if err := yamlUnmarshal(doc, &raw); err != nil {
			t.Fatal(err)
		}
		n := nad{name: raw.Metadata.Name, namespace: raw.Metadata.Namespace, resource: raw.Metadata.Annotations["k8s.v1.cni.cncf.io/resourceName"]}
		if err := json.Unmarshal([]byte(raw.Spec.Config), &n.conf); err != nil {
			t.Fatalf("NAD %s config: %v", n.name, err)
		}
		conf := maps.Clone(n.conf)
		conf["deviceID"], conf["pciBusID"] = "0000:18:00.2", "0000:18:00.2"
		b, _ := json.Marshal(conf)
		parsed, err := cniconfig.Parse(b)
		if err != nil {
			t.Fatalf("NAD %s: railyard-cni refuses its config: %v", n.name, err)
		}
		if parsed.Name != n.name || parsed.DeviceID != "0000:18:00.2" {
			t.Errorf("NAD %s parsed as %+v", n.name, parsed)
		}
		n.parsed = parsed
		out = append(out, n)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

func TestNetworksNameDefaultPoolsAndParseAsRailyardCNI(t *testing.T) {
	_, objs := render(t, map[string]any{"networks": map[string]any{"create": true}})
	cfg, err := v1alpha1.Parse([]byte(objs.configMap(t).Data["config.yaml"]))
	if err != nil {
		t.Fatal(err)
	}
	pools := map[string]bool{}
	for _, p := range cfg.Pools {
		pools[p.Name] = true
	}
	var names []string
	for _, n := range nads(t, objs) {
		names = append(names, n.name)
		if !pools[n.resource] {
			t.Errorf("NAD %s: resourceName %q is no pool of the default config", n.name, n.resource)
		}
		if !n.parsed.RDMA {
			t.Errorf("NAD %s: rdma off", n.name)
		}
		if n.name == "railyard-roce" && (n.parsed.MTU != 9000 || n.conf["vlan"] != float64(100)) {
			t.Errorf("RoCE NAD: mtu %d vlan %v", n.parsed.MTU, n.conf["vlan"])
		}
		if _, ib := n.conf["capabilities"].(map[string]any)["infinibandGUID"]; ib != (n.name == "railyard-rdma") {
			t.Errorf("NAD %s: infinibandGUID capability %v", n.name, ib)
		}
	}
	if diff := cmp.Diff([]string{"railyard-rdma", "railyard-roce"}, names); diff != "" {
		t.Fatalf("NADs (-want +got):\n%s", diff)
	}
}

// TestNetworksExtraRendersAPFNetworkAndAnyCNIKey: networks.extra renders a
// PF network, and a network's config map sets any railyard-cni key (here
// stateDir) over the chart's own: what docs/install.md's readers had to
// write by hand.
func TestNetworksExtraRendersAPFNetworkAndAnyCNIKey(t *testing.T) {
	_, objs := render(t, map[string]any{"networks": map[string]any{
		"create":     true,
		"namespace":  "nets",
		"roce":       map[string]any{"config": map[string]any{"stateDir": "/var/lib/railyard/cni", "mtu": 4200}},
		"infiniband": map[string]any{"enabled": false},
		"extra": []any{map[string]any{
			"name": "railyard-roce-pf", "resourceName": "railyard.io/roce_pf", "rdma": true, "mtu": 9000,
			"ipam": map[string]any{"type": "host-local", "subnet": "192.168.110.0/24"},
		}},
	}})
	got := nads(t, objs)
	if len(got) != 2 {
		t.Fatalf("%d NADs, want railyard-roce and railyard-roce-pf", len(got))
	}
	roce, pf := got[0], got[1]
	if roce.parsed.StateDir != "/var/lib/railyard/cni" || roce.parsed.MTU != 4200 || roce.conf["vlan"] != float64(100) {
		t.Errorf("railyard-roce: stateDir %q mtu %d vlan %v: config should override the chart's keys and keep the others", roce.parsed.StateDir, roce.parsed.MTU, roce.conf["vlan"])
	}
	if pf.name != "railyard-roce-pf" || pf.namespace != "nets" || pf.resource != "railyard.io/roce_pf" || pf.parsed.MTU != 9000 || !pf.parsed.RDMA {
		t.Errorf("PF network: %+v", pf)
	}
	if _, vlan := pf.conf["vlan"]; vlan {
		t.Error("PF network has a vlan")
	}
	if pf.parsed.StateDir != cniconfig.DefaultStateDir {
		t.Errorf("PF network stateDir %q, want the default", pf.parsed.StateDir)
	}
	for _, bad := range []map[string]any{
		{"name": "Bad_Name", "resourceName": "a.io/b", "ipam": map[string]any{"type": "x"}},
		{"name": "n", "ipam": map[string]any{"type": "x"}},
		{"name": "n", "resourceName": "a.io/b", "ipam": map[string]any{"type": "x"}, "config": "stateDir=/x"},
	} {
		if _, err := Render(loadChart(t), Options{Release: "r", Namespace: "n", Values: map[string]any{"networks": map[string]any{"extra": []any{bad}}}}); err == nil || !strings.Contains(err.Error(), "/networks/extra/0") {
			t.Errorf("extra %v: error %v, want one naming /networks/extra/0", bad, err)
		}
	}
}

func TestSchemaRejectsBadValues(t *testing.T) {
	ch := loadChart(t)
	for _, c := range []struct {
		values map[string]any
		want   string
	}{
		{map[string]any{"imagee": map[string]any{}}, "imagee"},
		{map[string]any{"image": map[string]any{"tag": 1}}, "/image/tag"},
		{map[string]any{"image": map[string]any{"digest": "sha256:xyz"}}, "/image/digest"},
		{map[string]any{"metrics": map[string]any{"port": "9410"}}, "/metrics/port"},
		{map[string]any{"config": map[string]any{"pool": []any{}}}, "pool"},
		{map[string]any{"config": map[string]any{"metricsAddr": "0.0.0.0:1"}}, "metricsAddr"},
		{map[string]any{"config": map[string]any{"sysfsRoot": "sys"}}, "/config/sysfsRoot"},
		{map[string]any{"config": map[string]any{"resyncInterval": "10 seconds"}}, "/config/resyncInterval"},
		{map[string]any{"config": map[string]any{"pools": []any{map[string]any{"name": "x", "selectors": map[string]any{}}}}}, "/config/pools/0/name"},
		{map[string]any{"config": map[string]any{"pools": []any{map[string]any{"name": "a.io/b", "policy": "closest", "selectors": map[string]any{}}}}}, "/config/pools/0/policy"},
		{map[string]any{"networks": map[string]any{"roce": map[string]any{"vlan": 5000}}}, "/networks/roce/vlan"},
		{map[string]any{"cni": map[string]any{"binDir": "opt/cni/bin"}}, "/cni/binDir"},
		{map[string]any{"nodeSetup": map[string]any{"policy": map[string]any{"pfs": []any{map[string]any{"netdev": "ib0", "numVFs": -1}}}}}, "/nodeSetup/policy/pfs/0/numVFs"},
		{map[string]any{"nodeSetup": map[string]any{"policy": map[string]any{"pfs": []any{map[string]any{"netdev": "ib0", "numVF": 8}}}}}, "numVF"},
		{map[string]any{"nodeSetup": map[string]any{"interval": "soon"}}, "/nodeSetup/interval"},
		{map[string]any{"nodeSetup": map[string]any{"interval": "100ms"}}, "/nodeSetup/interval"}, // node apply refuses under 1s
		{map[string]any{"nodeSetup": map[string]any{"interval": "0s"}}, "/nodeSetup/interval"},
		{map[string]any{"nodeSetup": map[string]any{"policy": map[string]any{"pfs": []any{map[string]any{"netdev": "ens1f0np0", "qos": map[string]any{"trust": "vlan"}}}}}}, "/nodeSetup/policy/pfs/0/qos/trust"},
		{map[string]any{"nodeSetup": map[string]any{"policy": map[string]any{"pfs": []any{map[string]any{"netdev": "ens1f0np0", "qos": map[string]any{"pfc": []any{8}}}}}}}, "/nodeSetup/policy/pfs/0/qos/pfc/0"},
	} {
		_, err := Render(ch, Options{Release: "r", Namespace: "n", Values: c.values})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want one naming %s", c.values, err, c.want)
		}
	}
}

// TestSchemaCoversEveryAgentConfigField fails when api/config/v1alpha1 (or
// the node policy, api/nodesetup/v1alpha1) gains or loses a field that
// values.schema.json does not list.
func TestSchemaCoversEveryAgentConfigField(t *testing.T) {
	var schema struct {
		Properties struct {
			Config    schemaObject `json:"config"`
			NodeSetup schemaObject `json:"nodeSetup"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(loadChart(t).Schema, &schema); err != nil {
		t.Fatal(err)
	}
	cfg := schema.Properties.Config
	pool := cfg.Properties["pools"].Items
	for _, c := range []struct {
		name   string
		typ    reflect.Type
		obj    schemaObject
		except []string
	}{
		{"config", reflect.TypeFor[v1alpha1.AgentConfig](), cfg, []string{"apiVersion", "kind", "metricsAddr"}},
		{"pool", reflect.TypeFor[v1alpha1.Pool](), *pool, nil},
		{"selectors", reflect.TypeFor[v1alpha1.Selectors](), *pool.Properties["selectors"], nil},
		{"deviceNodes", reflect.TypeFor[v1alpha1.DeviceNodes](), *pool.Properties["deviceNodes"], nil},
		{"nodeSetup.policy", reflect.TypeFor[nodesetup.NodePolicy](), *schema.Properties.NodeSetup.Properties["policy"], []string{"apiVersion", "kind"}},
		{"nodeSetup.policy.pfs", reflect.TypeFor[nodesetup.PF](), *schema.Properties.NodeSetup.Properties["policy"].Properties["pfs"].Items, nil},
	} {
		var fields, props []string
		skip := map[string]bool{}
		for _, e := range c.except {
			skip[e] = true
		}
		for i := range c.typ.NumField() {
			name := strings.Split(c.typ.Field(i).Tag.Get("json"), ",")[0]
			if name != "" && name != "-" && !skip[name] {
				fields = append(fields, name)
			}
		}
		for p := range c.obj.Properties {
			props = append(props, p)
		}
		sort.Strings(fields)
		sort.Strings(props)
		if diff := cmp.Diff(fields, props); diff != "" {
			t.Errorf("%s: fields of the Go type (-want) and values.schema.json (+got):\n%s", c.name, diff)
		}
		if c.obj.AdditionalProperties != false {
			t.Errorf("%s: schema accepts unknown fields", c.name)
		}
	}
}

type schemaObject struct {
	Properties           map[string]*schemaObject `json:"properties"`
	Items                *schemaObject            `json:"items"`
	AdditionalProperties any                      `json:"additionalProperties"` // false, or a schema
}

// TestNodeSetupIsOptInPrivilegedAndLoadsAsANodePolicy: off by default; on,
// a DaemonSet of its own runs `railyard node apply --watch` privileged in
// the host's network namespace (what writing sriov_numvfs and setting VF
// addresses through the PF need), with a policy file that `node apply`'s
// own loader accepts, and mounts exactly the two sources of "VFs in use"
// the policy names.
func TestNodeSetupIsOptInPrivilegedAndLoadsAsANodePolicy(t *testing.T) {
	for _, v := range variants() {
		_, objs := render(t, v.values)
		var ds appsv1.DaemonSet
		on := objs.byComponent(t, "DaemonSet", "node-setup", &ds)
		if v.name != "node-setup" {
			if on {
				t.Errorf("%s: node setup rendered without nodeSetup.enabled", v.name)
			}
			continue
		}
		if !on {
			t.Fatal("nodeSetup.enabled renders no DaemonSet")
		}
		var cm corev1.ConfigMap
		if !objs.byComponent(t, "ConfigMap", "node-setup", &cm) {
			t.Fatal("no node policy ConfigMap")
		}
		pol, err := nodesetup.Parse([]byte(cm.Data["policy.yaml"]))
		if err != nil {
			t.Fatalf("the node policy does not load: %v", err)
		}
		if len(pol.PFs) != 1 || pol.PFs[0].Netdev != "ibp24s0" || pol.PFs[0].NumVFs != 8 || pol.PFs[0].PKey != "0x8001" ||
			pol.CNIStateDir != "/var/lib/cni/railyard" || pol.PodResourcesSocket != "/var/lib/kubelet/pod-resources/kubelet.sock" {
			t.Errorf("policy %+v", pol)
		}
		spec := ds.Spec.Template.Spec
		if !spec.HostNetwork || len(spec.Containers) != 1 || len(spec.InitContainers) != 0 {
			t.Fatalf("pod spec: hostNetwork %v, %d containers", spec.HostNetwork, len(spec.Containers))
		}
		c := spec.Containers[0]
		if diff := cmp.Diff([]string{"/usr/local/bin/railyard", "node", "apply", "--policy=/etc/railyard-node/policy.yaml", "--watch", "--interval=1m"}, c.Command); diff != "" {
			t.Errorf("command (-want +got):\n%s", diff)
		}
		if sc := c.SecurityContext; sc == nil || sc.Privileged == nil || !*sc.Privileged || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
			t.Errorf("security context %+v", sc)
		}
		hostPaths := map[string]string{}
		for _, vol := range spec.Volumes {
			if vol.HostPath != nil {
				hostPaths[vol.Name] = vol.HostPath.Path
			}
		}
		got := map[string]bool{}
		for _, m := range c.VolumeMounts {
			if hp, ok := hostPaths[m.Name]; ok {
				if hp != m.MountPath {
					t.Errorf("host %s mounted at %s", hp, m.MountPath)
				}
				got[hp] = m.ReadOnly
			}
		}
		if diff := cmp.Diff(map[string]bool{"/var/lib/cni/railyard": true, "/var/lib/kubelet/pod-resources": false}, got); diff != "" {
			t.Errorf("host mounts, path: read-only (-want +got):\n%s", diff)
		}
		if ds.Spec.Selector.MatchLabels["app.kubernetes.io/component"] != "node-setup" {
			t.Errorf("selector %v overlaps the agent's", ds.Spec.Selector.MatchLabels)
		}
	}
}
