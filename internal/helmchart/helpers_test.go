package helmchart

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

var update = flag.Bool("update", false, "rewrite testdata/golden/*.yaml from the chart")

const chartDir = "../../deploy/helm/railyard"

func loadChart(t *testing.T) *chart.Chart {
	t.Helper()
	ch, err := Load(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	return ch
}

// variant is one set of values the chart is rendered and checked with.
type variant struct {
	name   string
	values map[string]any
}

func variants() []variant {
	return []variant{
		{"default", nil},
		{"networks", map[string]any{"networks": map[string]any{"create": true, "namespace": "tenant-a",
			"infiniband": map[string]any{"pkey": "0x8001"}}}},
		{"merged-custom-paths", map[string]any{
			"image":   map[string]any{"digest": "sha256:" + strings.Repeat("ab", 32)},
			"metrics": map[string]any{"enabled": false},
			"cni":     map[string]any{"install": false},
			"config": map[string]any{
				"ncclIBHCA": "merged", "cdiSpecDir": "/var/run/cdi", "stateDir": "/var/lib/railyard",
				"gpuMap": "/etc/railyard/gpu-map.csv", "ncclTopologyFile": "/etc/railyard/topo.xml",
				"pluginDir":          "/var/lib/k0s/kubelet/device-plugins",
				"podResourcesSocket": "/var/lib/k0s/kubelet/pod-resources/kubelet.sock",
				"pools": []any{map[string]any{"name": "railyard.io/rdma_shared", "deviceKind": "shared", "sharedLimit": 16,
					"policy": "spread", "selectors": map[string]any{"pfNames": []any{"ens113f0"}}}},
			},
		}},
		{"fabric", map[string]any{"fabric": map[string]any{"enabled": true, "wait": "40s", "interval": "10m"}}},
		{"fabric-infiniband", map[string]any{"fabric": map[string]any{"enabled": true, "infiniband": map[string]any{"enabled": true}}}},
		{"fabric-units-topograph", map[string]any{"fabric": map[string]any{"enabled": true, "holdRounds": 0,
			"labels": map[string]any{"scheme": "topograph"}, "units": map[string]any{"enabled": true, "interval": "2m"}}}},
		{"job-names", map[string]any{"metrics": map[string]any{"jobNames": true}}},
		{"pod-events", map[string]any{"cni": map[string]any{"podEvents": true}}},
		{"node-setup", map[string]any{"nodeSetup": map[string]any{"enabled": true, "interval": "1m",
			"policy": map[string]any{"pfs": []any{map[string]any{"netdev": "ibp24s0", "numVFs": 8, "linkLayer": "InfiniBand", "pkey": "0x8001"}}}}}},
		{"dra", map[string]any{
			"config": map[string]any{
				"cdiSpecDir": "/var/run/cdi",
				"pools": []any{
					map[string]any{"name": "railyard.io/rdma_vf", "deviceKind": "vf", "delivery": "dra",
						"selectors": map[string]any{"vendors": []any{"15b3"}, "linkLayers": []any{"InfiniBand"}}},
					map[string]any{"name": "railyard.io/roce_pf", "deviceKind": "pf", "policy": "packed",
						"selectors": map[string]any{"vendors": []any{"15b3"}, "linkLayers": []any{"Ethernet"}}},
				},
			},
		}},
		{"sandbox-binding", map[string]any{
			"config": map[string]any{
				"cdiSpecDir": "/var/run/cdi",
				"pools": []any{map[string]any{"name": "railyard.io/rdma_vf", "binding": "sandbox",
					"selectors": map[string]any{"vendors": []any{"15b3"}, "linkLayers": []any{"InfiniBand"}}}},
			},
		}},
	}
}

// objects splits rendered manifests into kind -> documents.
type objects struct {
	byKind map[string][]string
}

func render(t *testing.T, values map[string]any) ([]Manifest, objects) {
	t.Helper()
	ms, err := Render(loadChart(t), Options{Release: "railyard", Namespace: "railyard-system", Values: values})
	if err != nil {
		t.Fatal(err)
	}
	o := objects{byKind: map[string][]string{}}
	for _, m := range ms {
		var head struct{ Kind string }
		if err := yaml.Unmarshal([]byte(m.Content), &head); err != nil {
			t.Fatalf("%s: %v", m.Source, err)
		}
		o.byKind[head.Kind] = append(o.byKind[head.Kind], m.Content)
	}
	return ms, o
}

func (o objects) one(t *testing.T, kind string, into any) {
	t.Helper()
	docs := o.byKind[kind]
	if len(docs) != 1 {
		t.Fatalf("%d objects of kind %s, want 1", len(docs), kind)
	}
	if err := yaml.UnmarshalStrict([]byte(docs[0]), into); err != nil {
		t.Fatalf("%s: %v", kind, err)
	}
}

// byComponent decodes the object of kind whose app.kubernetes.io/component
// label is component; there must be exactly one.
func (o objects) byComponent(t *testing.T, kind, component string, into any) bool {
	t.Helper()
	found := 0
	for _, doc := range o.byKind[kind] {
		var head struct {
			Metadata struct{ Labels map[string]string }
		}
		if err := yaml.Unmarshal([]byte(doc), &head); err != nil {
			t.Fatal(err)
		}
		if head.Metadata.Labels["app.kubernetes.io/component"] != component {
			continue
		}
		found++
		if err := yaml.UnmarshalStrict([]byte(doc), into); err != nil {
			t.Fatalf("%s %s: %v", kind, component, err)
		}
	}
	if found > 1 {
		t.Fatalf("%d objects of kind %s for %s, want 1", found, kind, component)
	}
	return found == 1
}

// daemonSet is the agent's DaemonSet.
func (o objects) daemonSet(t *testing.T) *appsv1.DaemonSet {
	t.Helper()
	var ds appsv1.DaemonSet
	if !o.byComponent(t, "DaemonSet", "agent", &ds) {
		t.Fatal("no agent DaemonSet")
	}
	return &ds
}

// configMap is the agent's ConfigMap.
func (o objects) configMap(t *testing.T) *corev1.ConfigMap {
	t.Helper()
	var cm corev1.ConfigMap
	if !o.byComponent(t, "ConfigMap", "agent", &cm) {
		t.Fatal("no agent ConfigMap")
	}
	return &cm
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name+".yaml")
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./internal/helmchart -update)", err)
	}
	if string(want) != got {
		t.Fatalf("rendering %s differs from %s (run go test ./internal/helmchart -update and review the diff):\n%s", name, path, firstDiff(string(want), got))
	}
}

func firstDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := 0; i < len(al) || i < len(bl); i++ {
		var x, y string
		if i < len(al) {
			x = al[i]
		}
		if i < len(bl) {
			y = bl[i]
		}
		if x != y {
			return "line " + itoa(i+1) + ":\n- " + x + "\n+ " + y
		}
	}
	return ""
}

func itoa(i int) string {
	b, _ := yaml.Marshal(i)
	return strings.TrimSpace(string(b))
}
