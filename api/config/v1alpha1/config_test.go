package v1alpha1

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"
)

func TestLoadFixtures(t *testing.T) {
	files, err := filepath.Glob("testdata/*")
	if err != nil || len(files) == 0 {
		t.Fatalf("no fixtures: %v", err)
	}
	for _, f := range files {
		name := filepath.Base(f)
		t.Run(name, func(t *testing.T) {
			c, err := Load(f)
			switch {
			case strings.HasPrefix(name, "valid-"):
				if err != nil {
					t.Fatalf("Load: %v", err)
				}
				if len(c.Pools) == 0 {
					t.Fatal("no pools after load")
				}
			case strings.HasPrefix(name, "invalid-"):
				if !errors.Is(err, ErrInvalid) {
					t.Fatalf("Load = %v, want ErrInvalid", err)
				}
			default:
				t.Fatalf("fixture %s is neither valid-* nor invalid-*", name)
			}
		})
	}
}

func TestDefaults(t *testing.T) {
	c, err := Load("testdata/valid-minimal.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if c.SysfsRoot != "/sys" || c.DevRoot != "/dev" || c.PluginDir != DefaultPluginDir ||
		c.PodResourcesSocket != DefaultPodResourcesSocket || c.DevInfoDir != DefaultDevInfoDir ||
		c.MetricsAddr != DefaultMetricsAddr || c.ResyncInterval.Duration != DefaultResyncInterval {
		t.Errorf("paths not defaulted: %+v", c)
	}
	if strings.Join(c.GPUResourceNames, ",") != "nvidia.com/gpu,amd.com/gpu" {
		t.Errorf("GPUResourceNames = %v", c.GPUResourceNames)
	}
	p := c.Pools[0]
	if p.DeviceKind != KindVF || p.Policy != PolicyGPUAware || p.DeviceNodes.RDMACM == nil || !*p.DeviceNodes.RDMACM || p.DeviceNodes.UMAD {
		t.Errorf("pool not defaulted: %+v", p)
	}
}

func TestFullFileKeepsValues(t *testing.T) {
	c, err := Load("testdata/valid-full.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if c.ResyncInterval.Duration != 15*time.Second || c.NodeName != "gpu-node-1" || len(c.GPUResourceNames) != 1 {
		t.Errorf("top-level values lost: %+v", c)
	}
	p := c.Pools[0]
	if p.Selectors.RDMACapable == nil || !*p.Selectors.RDMACapable || !p.DeviceNodes.UMAD || p.CDIKind != "railyard.io/rdma" {
		t.Errorf("pool values lost: %+v", p)
	}
	if c.Pools[1].DeviceKind != KindPF || c.Pools[1].Policy != PolicyPacked {
		t.Errorf("pool 1 = %+v", c.Pools[1])
	}
}

// TestInvalidReportsEveryError checks that one bad file yields one line per
// problem, each with its field path.
func TestInvalidReportsEveryError(t *testing.T) {
	_, err := Load("testdata/invalid-many.yaml")
	if err == nil {
		t.Fatal("no error")
	}
	msg := err.Error()
	for _, want := range []string{
		"apiVersion: Unsupported value",
		"devRoot: Invalid value",
		"metricsAddr: Invalid value",
		"resyncInterval: Invalid value",
		"pools[0].name: Invalid value",
		"pools[0].deviceKind: Unsupported value",
		"pools[0].policy: Unsupported value",
		"pools[0].selectors.vendors[0]: Invalid value",
		"pools[0].selectors.devices[0]: Invalid value",
		"pools[0].selectors.pfNames[0]: Invalid value",
		"pools[0].selectors.pfNames[1]: Invalid value",
		"pools[0].selectors.pciAddresses[0]: Invalid value",
		"pools[0].selectors.linkLayers[0]: Unsupported value",
		"pools[0].selectors.numaNodes[0]: Invalid value",
		"pools[1].name: Invalid value",
		"pools[2].name: Duplicate value",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("error lacks %q:\n%s", want, msg)
		}
	}
}

func TestUnknownFieldNamed(t *testing.T) {
	_, err := Load("testdata/invalid-unknown-field.yaml")
	if err == nil || !strings.Contains(err.Error(), `unknown field "pools[0].selectors.vendor"`) {
		t.Fatalf("err = %v, want the unknown field named", err)
	}
}

func TestLoadMissingFile(t *testing.T) {
	_, err := Load(filepath.Join(t.TempDir(), "nope.yaml"))
	if err == nil || !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("err = %v", err)
	}
}

func TestParsePFName(t *testing.T) {
	p, err := ParsePFName("ibp24s0#0-3,6")
	if err != nil {
		t.Fatal(err)
	}
	if p.Name != "ibp24s0" {
		t.Errorf("name = %q", p.Name)
	}
	for idx, want := range map[int]bool{0: true, 3: true, 4: false, 5: false, 6: true, 7: false} {
		if p.Contains(idx) != want {
			t.Errorf("Contains(%d) = %v", idx, !want)
		}
	}
	all, err := ParsePFName("ens1f0")
	if err != nil || !all.Contains(1000) {
		t.Errorf("bare name should select every VF: %+v %v", all, err)
	}
	for _, bad := range []string{"", "#0-1", "x#", "x#3-1", "x#a", "x#1-", "x#-1", "x#99999999999999999999", "averyveryverylongname0", "a b"} {
		if _, err := ParsePFName(bad); err == nil {
			t.Errorf("ParsePFName(%q) accepted", bad)
		}
	}
}

func FuzzParsePFName(f *testing.F) {
	for _, s := range []string{"ibp24s0#0-7", "x#1,2-3", "#", "a#-", "a#0-65535"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParsePFName(s)
		if err != nil {
			return
		}
		for _, r := range p.Ranges {
			if r.First > r.Last || r.First < 0 {
				t.Fatalf("bad range %+v from %q", r, s)
			}
		}
	})
}

func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob("testdata/*")
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse(data)
		if err == nil && len(Validate(c)) != 0 {
			t.Fatal("Parse accepted a config that does not validate")
		}
	})
}

// TestDeployedConfigMapIsValid parses the config.yaml of the example
// ConfigMap in deploy/railyard-agent.yaml.
func TestDeployedConfigMapIsValid(t *testing.T) {
	data, err := os.ReadFile("../../../deploy/railyard-agent.yaml")
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, doc := range strings.Split(string(data), "\n---\n") {
		var cm struct {
			Kind string            `json:"kind"`
			Data map[string]string `json:"data"`
		}
		if err := yaml.Unmarshal([]byte(doc), &cm); err != nil {
			t.Fatal(err)
		}
		if cm.Kind != "ConfigMap" {
			continue
		}
		found = true
		c, err := Parse([]byte(cm.Data["config.yaml"]))
		if err != nil {
			t.Fatalf("deployed config: %v", err)
		}
		if len(c.Pools) == 0 || c.MetricsAddr != "0.0.0.0:9410" {
			t.Errorf("deployed config = %+v", c)
		}
	}
	if !found {
		t.Fatal("no ConfigMap in deploy/railyard-agent.yaml")
	}
}
