package gpustandin_test

import (
	"context"
	"regexp"
	"testing"

	resourceapi "k8s.io/api/resource/v1"

	"github.com/railyard-io/railyard/internal/dra"
	"github.com/railyard-io/railyard/internal/dra/gpustandin"
	"github.com/railyard-io/railyard/machines"
)

// The stand-in publishes a DGX H100's 8 GPUs as NVIDIA's driver shapes
// them: gpu-0..gpu-7 in PCI order, its attribute names and types, the
// standard PCI attributes from the model, 80 GiB of memory.
func TestStandInShapeOnDGXH100(t *testing.T) {
	topo, err := machines.Topology(context.Background(), "dgx-h100", 0)
	if err != nil {
		t.Fatal(err)
	}
	slices := gpustandin.ResourceSlices("node-a", topo)
	if len(slices) != 1 || slices[0].Spec.Driver != "gpu.nvidia.com" || slices[0].Spec.Pool.Name != "node-a" || *slices[0].Spec.NodeName != "node-a" {
		t.Fatalf("slices %+v", slices)
	}
	devs := slices[0].Spec.Devices
	if len(devs) != 8 {
		t.Fatalf("%d GPUs", len(devs))
	}
	d := devs[1]
	str := func(name string) string {
		v, ok := d.Attributes[toQ(name)]
		if !ok || v.StringValue == nil {
			return ""
		}
		return *v.StringValue
	}
	if d.Name != "gpu-1" || str("resource.kubernetes.io/pciBusID") != "0000:43:00.0" || str("resource.kubernetes.io/pcieRoot") != "pci0000:37" ||
		str("type") != "gpu" || str("productName") != "NVIDIA H100 80GB HBM3" || str("architecture") != "Hopper" {
		t.Errorf("gpu-1: %+v", d.Attributes)
	}
	if n := d.Attributes[dra.AttrNUMANode].IntValue; n == nil || *n != 0 {
		t.Errorf("gpu-1 numaNode %v", n)
	}
	for _, v := range []string{"cudaComputeCapability", "driverVersion", "cudaDriverVersion"} {
		if d.Attributes[toQ(v)].VersionValue == nil {
			t.Errorf("%s is not a version", v)
		}
	}
	if !regexp.MustCompile(`^GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`).MatchString(str("uuid")) ||
		str("uuid") != gpustandin.UUID("0000:43:00.0") || str("uuid") == *devs[0].Attributes["uuid"].StringValue {
		t.Errorf("uuid %q", str("uuid"))
	}
	if m := d.Capacity["memory"].Value; m.Value() != 80<<30 {
		t.Errorf("memory %s", m.String())
	}
}

// A GPU whose NUMA node is unknown (the vSphere VM) has no numaNode, never
// -1, as NVIDIA's driver and KEP-6072 say.
func TestStandInOmitsUnknownNUMA(t *testing.T) {
	topo, err := machines.Topology(context.Background(), "vsphere-pvrdma", 0)
	if err != nil {
		t.Fatal(err)
	}
	devs := gpustandin.Devices(topo)
	if len(devs) != 1 || devs[0].Name != "gpu-0" {
		t.Fatalf("%+v", devs)
	}
	if _, ok := devs[0].Attributes[dra.AttrNUMANode]; ok {
		t.Error("numaNode published for a GPU without a NUMA node")
	}
	if v := devs[0].Attributes["productName"].StringValue; v == nil || *v != "Tesla T4" {
		t.Errorf("productName %v", v)
	}
}

func toQ(s string) resourceapi.QualifiedName { return resourceapi.QualifiedName(s) }
