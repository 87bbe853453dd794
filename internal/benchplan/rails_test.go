package benchplan

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/railyard-io/railyard/api/config/v1alpha1"
)

// TestDefaultResourceIsAShippedPool reads deploy/railyard-agent.yaml, parses
// its ConfigMap's agent configuration with the agent's own parser and checks
// that DefaultResource (and nothing else) names one of its pools: a plan
// made with defaults requests a resource the shipped agent serves.
func TestDefaultResourceIsAShippedPool(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "deploy", "railyard-agent.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var config string
	for _, doc := range strings.Split(string(data), "\n---\n") {
		var cm struct {
			Kind string            `json:"kind"`
			Data map[string]string `json:"data"`
		}
		if err := yaml.Unmarshal([]byte(doc), &cm); err != nil {
			t.Fatal(err)
		}
		if cm.Kind == "ConfigMap" {
			config = cm.Data["config.yaml"]
		}
	}
	if config == "" {
		t.Fatal("no ConfigMap with config.yaml in deploy/railyard-agent.yaml")
	}
	cfg, err := v1alpha1.Parse([]byte(config))
	if err != nil {
		t.Fatalf("shipped configuration: %v", err)
	}
	var pools []string
	for _, p := range cfg.Pools {
		pools = append(pools, p.Name)
	}
	if !slices.Contains(pools, DefaultResource) {
		t.Errorf("DefaultResource %q is not a pool of deploy/railyard-agent.yaml (pools %v)", DefaultResource, pools)
	}
}

func TestParseRails(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		resources, classes, networks []string
		count                        int
		want                         []Rail
		err                          string
	}{
		"defaults":                       {count: 1, want: []Rail{{Resource: DefaultResource, Count: 1, Network: DefaultNetwork}}},
		"resource only":                  {resources: []string{"a.io/x"}, count: 2, want: []Rail{{Resource: "a.io/x", Count: 2, Network: DefaultNetwork}}},
		"network only":                   {networks: []string{"n"}, count: 1, want: []Rail{{Resource: DefaultResource, Count: 1, Network: "n"}}},
		"no network":                     {resources: []string{"a.io/x"}, networks: []string{""}, count: 1, want: []Rail{{Resource: "a.io/x", Count: 1}}},
		"two rails paired":               {resources: []string{"intel.com/sriov_111", "intel.com/sriov_112=2"}, networks: []string{"sriov-111", "sriov-112"}, count: 1, want: []Rail{{Resource: "intel.com/sriov_111", Count: 1, Network: "sriov-111"}, {Resource: "intel.com/sriov_112", Count: 2, Network: "sriov-112"}}},
		"two resources, default network": {resources: []string{"a.io/x", "a.io/y"}, count: 1, err: "2 --resource but 1 --network"},
		"one resource, two networks":     {resources: []string{"a.io/x"}, networks: []string{"n1", "n2"}, count: 1, err: "1 --resource but 2 --network"},
		"bad count":                      {resources: []string{"a.io/x=0"}, count: 1, err: `--resource "a.io/x=0"`},
		"count not a number":             {resources: []string{"a.io/x=two"}, count: 1, err: "positive integer"},
		// DRA rails: no default resource, no default network.
		"device class only":      {classes: []string{"railyard.io-rail0"}, count: 1, want: []Rail{{DeviceClass: "railyard.io-rail0", Count: 1}}},
		"device class count":     {classes: []string{"a=4", "b"}, count: 2, want: []Rail{{DeviceClass: "a", Count: 4}, {DeviceClass: "b", Count: 2}}},
		"device class, network":  {classes: []string{"c"}, networks: []string{"ns/n@rail0"}, count: 1, want: []Rail{{DeviceClass: "c", Count: 1, Network: "ns/n@rail0"}}},
		"resource then class":    {resources: []string{"a.io/x=2"}, classes: []string{"c"}, count: 1, want: []Rail{{Resource: "a.io/x", Count: 2}, {DeviceClass: "c", Count: 1}}},
		"mixed, networks paired": {resources: []string{"a.io/x"}, classes: []string{"c"}, networks: []string{"nx", ""}, count: 1, want: []Rail{{Resource: "a.io/x", Count: 1, Network: "nx"}, {DeviceClass: "c", Count: 1}}},
		"mixed, one network":     {resources: []string{"a.io/x"}, classes: []string{"c"}, networks: []string{"nx"}, count: 1, err: "1 --resource and 1 --device-class but 1 --network"},
		"class, two networks":    {classes: []string{"c"}, networks: []string{"n1", "n2"}, count: 1, err: "0 --resource and 1 --device-class but 2 --network"},
		"class bad count":        {classes: []string{"c=-1"}, count: 1, err: `--device-class "c=-1": the count`},
		"both counts bad":        {resources: []string{"a.io/x=0"}, classes: []string{"c=x"}, count: 1, err: `--resource "a.io/x=0": the count after '=' must be a positive integer` + "\n" + `--device-class "c=x"`},
	} {
		got, err := ParseRails(tc.resources, tc.classes, tc.networks, tc.count)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: err = %v, want %q", name, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", name, err)
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", name, diff)
		}
	}
}

// TestPlanTwoRails is the published two-rail shape: each benchmark pod asks
// for one device of each of two SR-IOV resources and attaches both
// networks; the TCP variant lets NCCL use both interfaces.
func TestPlanTwoRails(t *testing.T) {
	o := baseOptions()
	o.Rails = []Rail{
		{Resource: "intel.com/sriov_111", Network: "sriov-111"},
		{Resource: "intel.com/sriov_112", Count: 2, Network: "ml/sriov-112@rail2"},
	}
	data := planYAML(t, o)
	p := parse(t, data)
	if len(p.pods) != 4 || len(p.jobs) != 2 {
		t.Fatalf("pods %d jobs %d", len(p.pods), len(p.jobs))
	}
	const wantNets = "sriov-111,ml/sriov-112@rail2"
	for _, pod := range p.pods {
		c := pod.Spec.Containers[0]
		checkRequest(t, pod.Name, c, "intel.com/sriov_111", 1)
		checkRequest(t, pod.Name, c, "intel.com/sriov_112", 2)
		if _, ok := c.Resources.Limits[corev1.ResourceName(DefaultResource)]; ok {
			t.Errorf("%s: still requests the default resource", pod.Name)
		}
		if len(c.Resources.Limits) != 2 {
			t.Errorf("%s: limits %v, want exactly the two rails", pod.Name, c.Resources.Limits)
		}
		if got := pod.Annotations[NetworksAnnotation]; got != wantNets {
			t.Errorf("%s: networks %q, want %q", pod.Name, got, wantNets)
		}
	}
	for _, job := range p.jobs {
		jobName := job["metadata"].(map[string]any)["name"].(string)
		worker, _ := template(t, job, "Worker")
		wc := worker.Spec.Containers[0]
		checkRequest(t, jobName, wc, "intel.com/sriov_111", 1)
		checkRequest(t, jobName, wc, "intel.com/sriov_112", 2)
		checkRequest(t, jobName, wc, DefaultGPUResource, 8)
		if got := worker.Annotations[NetworksAnnotation]; got != wantNets {
			t.Errorf("%s: networks %q", jobName, got)
		}
		ifname, ok := envValue(wc.Env, "NCCL_SOCKET_IFNAME")
		if strings.HasSuffix(jobName, "-tcp") && ifname != "net1,rail2" {
			t.Errorf("%s: NCCL_SOCKET_IFNAME = %q, want net1,rail2", jobName, ifname)
		}
		if strings.HasSuffix(jobName, "-rdma") && ok {
			t.Errorf("%s: RDMA variant sets NCCL_SOCKET_IFNAME=%q", jobName, ifname)
		}
	}
}

// TestPlanRailWithoutNetwork: a rail with no network still requests its
// resource; interface numbering follows the annotation's positions.
func TestPlanRailWithoutNetwork(t *testing.T) {
	o := baseOptions()
	o.Variants = []Variant{TCP}
	o.Tests = []Test{NCCLTests}
	o.Rails = []Rail{{Resource: "a.io/x"}, {Resource: "a.io/y", Network: "y"}, {Resource: "a.io/z", Network: "z"}}
	data := planYAML(t, o)
	worker, _ := template(t, parse(t, data).jobs[0], "Worker")
	if got := worker.Annotations[NetworksAnnotation]; got != "y,z" {
		t.Errorf("networks %q", got)
	}
	if v, _ := envValue(worker.Spec.Containers[0].Env, "NCCL_SOCKET_IFNAME"); v != "net1,net2" {
		t.Errorf("NCCL_SOCKET_IFNAME = %q", v)
	}
	for _, r := range []string{"a.io/x", "a.io/y", "a.io/z"} {
		checkRequest(t, "worker", worker.Spec.Containers[0], r, 1)
	}
}
