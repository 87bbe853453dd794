package dra_test

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/dynamic-resource-allocation/structured"
	"sigs.k8s.io/yaml"

	"github.com/railyard-io/railyard/api/config/v1alpha1"
	"github.com/railyard-io/railyard/internal/dra"
	"github.com/railyard-io/railyard/internal/topology"
)

var update = flag.Bool("update", false, "rewrite docs/examples/dra/*.yaml from the claims the tests use")

const examplesDir = "../../docs/examples/dra"

const exampleHeader = "# A claim from docs/dra.md, generated from the claim internal/dra's tests run\n" +
	"# (go test ./internal/dra -run TestDocExamples -update).\n"

// nicOnly is one NIC with GPUDirect RDMA to some GPU, InfiniBand, 400 Gb/s.
func nicOnly() *resourceapi.ResourceClaim {
	return claim("nic-only", []resourceapi.DeviceRequest{exactly("nic", dra.DeviceClassName,
		`"bestGPUClass" in device.attributes["railyard.io"] && device.attributes["railyard.io"].bestGPUClass in ["PIX", "PXB"]`,
		`"linkLayer" in device.attributes["railyard.io"] && device.attributes["railyard.io"].linkLayer == "InfiniBand"`,
		`"speedGbps" in device.attributes["railyard.io"] && device.attributes["railyard.io"].speedGbps >= 400`,
	)}, nil)
}

// examples are the claims docs/dra.md shows, as ResourceClaimTemplates in
// docs/examples/dra: the same claims the allocator tests run.
var examples = []struct {
	file  string
	claim func() *resourceapi.ResourceClaim
	// shared: a claim of a shared pool's NICs (TestDocSharedExample
	// allocates it), not of the VF pool.
	shared bool
}{
	{"gpu-and-nic.yaml", func() *resourceapi.ResourceClaim { return alignedPairs(1) }, false},
	{"gpu-and-nic-same-root.yaml", func() *resourceapi.ResourceClaim { return strictPairs(1) }, false},
	{"8-gpus-8-rails.yaml", func() *resourceapi.ResourceClaim { return alignedPairs(8) }, false},
	{"nic-only.yaml", nicOnly, false},
	{"two-shared-nics.yaml", twoSharedNICs, true},
}

// withoutDefaults drops what the API server defaults (allocationMode
// ExactCount, count 1), as a user writes a claim.
func withoutDefaults(spec resourceapi.ResourceClaimSpec) resourceapi.ResourceClaimSpec {
	out := *spec.DeepCopy()
	for i := range out.Devices.Requests {
		r := &out.Devices.Requests[i]
		if r.Exactly != nil && r.Exactly.AllocationMode == resourceapi.DeviceAllocationModeExactCount && r.Exactly.Count == 1 {
			r.Exactly.AllocationMode, r.Exactly.Count = "", 0
		}
		for j := range r.FirstAvailable {
			s := &r.FirstAvailable[j]
			if s.AllocationMode == resourceapi.DeviceAllocationModeExactCount && s.Count == 1 {
				s.AllocationMode, s.Count = "", 0
			}
		}
	}
	return out
}

// withDefaults is what the API server stores.
func withDefaults(spec resourceapi.ResourceClaimSpec) resourceapi.ResourceClaimSpec {
	out := *spec.DeepCopy()
	for i := range out.Devices.Requests {
		r := &out.Devices.Requests[i]
		if r.Exactly != nil && r.Exactly.AllocationMode == "" {
			r.Exactly.AllocationMode, r.Exactly.Count = resourceapi.DeviceAllocationModeExactCount, 1
		}
		for j := range r.FirstAvailable {
			if s := &r.FirstAvailable[j]; s.AllocationMode == "" {
				s.AllocationMode, s.Count = resourceapi.DeviceAllocationModeExactCount, 1
			}
		}
	}
	return out
}

func template(c *resourceapi.ResourceClaim) ([]byte, error) {
	type meta struct {
		Name string `json:"name"`
	}
	type tmpl struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   meta   `json:"metadata"`
		Spec       struct {
			Spec resourceapi.ResourceClaimSpec `json:"spec"`
		} `json:"spec"`
	}
	t := tmpl{APIVersion: "resource.k8s.io/v1", Kind: "ResourceClaimTemplate", Metadata: meta{c.Name}}
	t.Spec.Spec = withoutDefaults(c.Spec)
	b, err := yaml.Marshal(t)
	return append([]byte(exampleHeader), b...), err
}

// The example files are exactly the claims the tests run (go test
// ./internal/dra -run TestDocExamples -update rewrites them).
func TestDocExamplesAreTheTestedClaims(t *testing.T) {
	for _, ex := range examples {
		want, err := template(ex.claim())
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(examplesDir, ex.file)
		if *update {
			if err := os.WriteFile(path, want, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from the tested claim; run go test ./internal/dra -run TestDocExamples -update", path)
		}
	}
}

// deviceclass.yaml is dra.DeviceClass, for clusters without the chart's.
func TestDocDeviceClassIsTheLibrarys(t *testing.T) {
	dc := dra.DeviceClass()
	dc.APIVersion, dc.Kind = "resource.k8s.io/v1", "DeviceClass"
	type meta struct {
		Name string `json:"name"`
	}
	b, err := yaml.Marshal(struct {
		APIVersion string                      `json:"apiVersion"`
		Kind       string                      `json:"kind"`
		Metadata   meta                        `json:"metadata"`
		Spec       resourceapi.DeviceClassSpec `json:"spec"`
	}{dc.APIVersion, dc.Kind, meta{dc.Name}, dc.Spec})
	if err != nil {
		t.Fatal(err)
	}
	want := append([]byte("# Railyard's DeviceClass (internal/dra.DeviceClass; go test ./internal/dra -run TestDocDeviceClass -update).\n"), b...)
	path := filepath.Join(examplesDir, "deviceclass.yaml")
	if *update {
		if err := os.WriteFile(path, want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var back resourceapi.DeviceClass
	if err := yaml.UnmarshalStrict(got, &back); err != nil || !bytes.Equal(got, want) || back.Name != dra.DeviceClassName {
		t.Errorf("%s differs from dra.DeviceClass (%v); run with -update", path, err)
	}
}

// loadExample decodes an example strictly, as the API server would take
// it, and returns the claim a template makes (defaults applied).
func loadExample(t *testing.T, file string) *resourceapi.ResourceClaim {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(examplesDir, file))
	if err != nil {
		t.Fatal(err)
	}
	var tmpl resourceapi.ResourceClaimTemplate
	if err := yaml.UnmarshalStrict(data, &tmpl); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	if tmpl.APIVersion != "resource.k8s.io/v1" || tmpl.Kind != "ResourceClaimTemplate" {
		t.Fatalf("%s: %s %s", file, tmpl.APIVersion, tmpl.Kind)
	}
	c := claim(tmpl.Name, nil, nil)
	c.ObjectMeta = metav1.ObjectMeta{Name: tmpl.Name, Namespace: "default", UID: "uid-" + "example"}
	c.Spec = withDefaults(tmpl.Spec.Spec)
	return c
}

// Each example, read from its file, allocates on a DGX H100 (VF pool) as
// the docs say: every GPU with a PIX NIC, the NIC-only claim on a rail.
func TestDocExamplesAllocateOnDGXH100(t *testing.T) {
	c := newCluster(t, "dgx-h100", v1alpha1.KindVF, 2)
	for _, ex := range examples {
		if ex.shared {
			continue
		}
		cl := loadExample(t, ex.file)
		if !equality.Semantic.DeepEqual(cl.Spec, ex.claim().Spec) {
			t.Errorf("%s: decoded spec differs from the claim", ex.file)
		}
		res, _ := allocate(context.Background(), t, c.slices, sets.New[structured.DeviceID](), nodeName, cl, filterTimeout)
		if res == nil {
			t.Errorf("%s: not allocated", ex.file)
			continue
		}
		gpus := map[string]string{}
		for _, r := range res.Devices.Results {
			if r.Driver == dra.DriverName {
				pci, _ := dra.PCIAddress(r.Device)
				gpus[r.Request] = pci
			}
		}
		if ex.file == "nic-only.yaml" {
			pf := c.topo.NICs[0].PCI // 0000:18:00.0, GPU 0's rail; its first VF comes first
			if gpus["nic"] != "0000:18:00.1" || railGPU(c.topo, pf) == "" {
				t.Errorf("nic-only: %v", gpus)
			}
			continue
		}
		n := len(res.Devices.Results) / 2
		for _, p := range c.pairs(t, res, n) {
			if cls := c.topo.Class(p.gpu.pci, p.nic.pci); cls != topology.PIX {
				t.Errorf("%s: GPU %s with NIC %s is %s", ex.file, p.gpu.pci, p.nic.pci, cls)
			}
		}
	}
}
