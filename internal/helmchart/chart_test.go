package helmchart

import (
	"encoding/json"
	"path"
	"reflect"
	"sort"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/railyard-io/railyard/api/config/v1alpha1"
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
		if spec.AutomountServiceAccountToken == nil || *spec.AutomountServiceAccountToken {
			t.Errorf("%s: service account token mounted", v.name)
		}
		if spec.SecurityContext == nil || spec.SecurityContext.SeccompProfile == nil || spec.SecurityContext.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
			t.Errorf("%s: pod seccomp %+v", v.name, spec.SecurityContext)
		}
		all := append(append([]corev1.Container{}, spec.InitContainers...), spec.Containers...)
		for _, c := range all {
			sc := c.SecurityContext
			if sc == nil || sc.Privileged == nil || *sc.Privileged || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
				sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem || sc.Capabilities == nil ||
				!reflect.DeepEqual(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) != 0 ||
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
		if cfg.NCCLIBHCA == "merged" || sandbox {
			want[cfg.StateDir] = mount{cfg.StateDir, false}
			if cfg.CDISpecDir != "" {
				want[cfg.CDISpecDir] = mount{cfg.CDISpecDir, false}
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
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: agent host mounts\n got %v\nwant %v", v.name, got, want)
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

// TestNetworksNameDefaultPoolsAndParseAsRailyardCNI: each example NAD
// names a pool of the default configuration, and its config, with the
// deviceID and pciBusID Multus adds, passes railyard-cni's own parser.
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
	nads := objs.byKind["NetworkAttachmentDefinition"]
	if len(nads) != 2 {
		t.Fatalf("%d NADs", len(nads))
	}
	var names []string
	for _, doc := range nads {
		var nad struct {
			Metadata struct {
				Name        string
				Namespace   string
				Annotations map[string]string
			}
			Spec struct{ Config string }
		}
		if err := yamlUnmarshal(doc, &nad); err != nil {
			t.Fatal(err)
		}
		names = append(names, nad.Metadata.Name)
		res := nad.Metadata.Annotations["k8s.v1.cni.cncf.io/resourceName"]
		if !pools[res] {
			t.Errorf("NAD %s: resourceName %q is no pool of the default config", nad.Metadata.Name, res)
		}
		var conf map[string]any
		if err := json.Unmarshal([]byte(nad.Spec.Config), &conf); err != nil {
			t.Fatalf("NAD %s config: %v", nad.Metadata.Name, err)
		}
		conf["deviceID"], conf["pciBusID"] = "0000:18:00.2", "0000:18:00.2" // as Multus does
		b, _ := json.Marshal(conf)
		parsed, err := cniconfig.Parse(b)
		if err != nil {
			t.Errorf("NAD %s: railyard-cni refuses its config: %v", nad.Metadata.Name, err)
			continue
		}
		if parsed.Name != nad.Metadata.Name || parsed.DeviceID != "0000:18:00.2" || !parsed.RDMA {
			t.Errorf("NAD %s parsed as %+v", nad.Metadata.Name, parsed)
		}
		if nad.Metadata.Name == "railyard-roce" && (parsed.MTU != 9000 || conf["vlan"] != float64(100)) {
			t.Errorf("RoCE NAD: mtu %d vlan %v", parsed.MTU, conf["vlan"])
		}
	}
	sort.Strings(names)
	if !reflect.DeepEqual(names, []string{"railyard-rdma", "railyard-roce"}) {
		t.Fatalf("NADs %v", names)
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
	} {
		_, err := Render(ch, Options{Release: "r", Namespace: "n", Values: c.values})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want one naming %s", c.values, err, c.want)
		}
	}
}

// TestSchemaCoversEveryAgentConfigField fails when api/config/v1alpha1
// gains or loses a field that values.schema.json does not list.
func TestSchemaCoversEveryAgentConfigField(t *testing.T) {
	var schema struct {
		Properties struct {
			Config schemaObject `json:"config"`
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
		if !reflect.DeepEqual(fields, props) {
			t.Errorf("%s: api/config/v1alpha1 has %v, values.schema.json %v", c.name, fields, props)
		}
		if c.obj.AdditionalProperties == nil || *c.obj.AdditionalProperties {
			t.Errorf("%s: schema accepts unknown fields", c.name)
		}
	}
}

type schemaObject struct {
	Properties           map[string]*schemaObject `json:"properties"`
	Items                *schemaObject            `json:"items"`
	AdditionalProperties *bool                    `json:"additionalProperties"`
}
