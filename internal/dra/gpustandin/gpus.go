package gpustandin

import (
	"crypto/sha256"
	"fmt"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/railyard-io/railyard/internal/dra"
	"github.com/railyard-io/railyard/internal/pciaddr"
	"github.com/railyard-io/railyard/internal/topology"
)

// DriverName is NVIDIA's GPU driver name, which the stand-in borrows so
// that claims written for it are claims for the real driver.
const DriverName = "gpu.nvidia.com"

// DeviceClassName is the DeviceClass NVIDIA's Helm chart installs for
// whole GPUs.
const DeviceClassName = "gpu.nvidia.com"

const nvidiaVendor = 0x10de

// product is what NVML would say about a GPU model.
type product struct {
	name, brand, arch, cc string
	memGiB                int64
}

// products covers the GPUs of the built-in machines.
var products = map[uint16]product{
	0x1db5: {"Tesla V100-SXM2-32GB", "Tesla", "Volta", "7.0", 32},
	0x1eb8: {"Tesla T4", "Tesla", "Turing", "7.5", 16},
	0x20b0: {"NVIDIA A100-SXM4-40GB", "Nvidia", "Ampere", "8.0", 40},
	0x2330: {"NVIDIA H100 80GB HBM3", "Nvidia", "Hopper", "9.0", 80},
}

// Fixed versions: the stand-in has no driver to ask.
const (
	driverVersion     = "550.90.7"
	cudaDriverVersion = "12.4.0"
)

// Devices returns the model's NVIDIA GPUs as NVIDIA's driver publishes
// whole GPUs, named "gpu-<minor>" with minors in PCI address order (the
// order the NVIDIA kernel driver numbers them in).
func Devices(t *topology.Topology) []resourceapi.Device {
	var out []resourceapi.Device
	minor := 0
	for _, g := range t.GPUs { // sorted by address
		if g.Vendor != nvidiaVendor {
			continue
		}
		out = append(out, device(t, g, minor))
		minor++
	}
	return out
}

func device(t *topology.Topology, g topology.GPU, minor int) resourceapi.Device {
	p, ok := products[g.Device]
	if !ok {
		p = product{fmt.Sprintf("NVIDIA GPU %04x", g.Device), "Nvidia", "Unknown", "0.0", 0}
	}
	str := func(s string) resourceapi.DeviceAttribute { return resourceapi.DeviceAttribute{StringValue: &s} }
	ver := func(s string) resourceapi.DeviceAttribute { return resourceapi.DeviceAttribute{VersionValue: &s} }
	attrs := map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
		"type":                  str("gpu"),
		"uuid":                  str(UUID(g.PCI)),
		"productName":           str(p.name),
		"brand":                 str(p.brand),
		"architecture":          str(p.arch),
		"cudaComputeCapability": ver(p.cc + ".0"),
		"driverVersion":         ver(driverVersion),
		"cudaDriverVersion":     ver(cudaDriverVersion),
		dra.AttrPCIBusID:        str(g.PCI),
	}
	if d, ok := t.Device(g.PCI); ok && d.HostBridge != "" {
		root := d.HostBridge
		if hb, err := pciaddr.ParseHostBridge(root); err == nil {
			root = hb.String()
		}
		attrs[dra.AttrPCIeRoot] = str(root)
	}
	if g.NUMA >= 0 {
		n := int64(g.NUMA)
		attrs[dra.AttrNUMANode] = resourceapi.DeviceAttribute{IntValue: &n}
	}
	dev := resourceapi.Device{Name: fmt.Sprintf("gpu-%d", minor), Attributes: attrs}
	if p.memGiB > 0 {
		dev.Capacity = map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{
			"memory": {Value: *resource.NewQuantity(p.memGiB<<30, resource.BinarySI)},
		}
	}
	return dev
}

// UUID is the stand-in's GPU UUID: "GPU-" and a UUID-shaped hash of the PCI
// address, stable for a model.
func UUID(pci string) string {
	h := sha256.Sum256([]byte("railyard-gpu-standin/" + pci))
	return fmt.Sprintf("GPU-%x-%x-%x-%x-%x", h[0:4], h[4:6], h[6:8], h[8:10], h[10:16])
}

// ResourceSlices renders the GPUs as one ResourceSlice of pool node, as
// NVIDIA's kubelet plugin publishes them (at most 128 GPUs, far more than
// any node has).
func ResourceSlices(node string, t *topology.Topology) []*resourceapi.ResourceSlice {
	return []*resourceapi.ResourceSlice{{
		ObjectMeta: metav1.ObjectMeta{Name: node + "-gpu-nvidia-com-standin"},
		Spec: resourceapi.ResourceSliceSpec{
			Driver:   DriverName,
			Pool:     resourceapi.ResourcePool{Name: node, Generation: 1, ResourceSliceCount: 1},
			NodeName: &node,
			Devices:  Devices(t),
		},
	}}
}

// DeviceClass is the class NVIDIA's chart installs for whole GPUs.
func DeviceClass() *resourceapi.DeviceClass {
	return &resourceapi.DeviceClass{
		ObjectMeta: metav1.ObjectMeta{Name: DeviceClassName},
		Spec: resourceapi.DeviceClassSpec{Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{
			Expression: `device.driver == "gpu.nvidia.com" && device.attributes["gpu.nvidia.com"].type == "gpu"`,
		}}}},
	}
}

// Classes is a DeviceClass lister for the scheduler's allocator
// (structured.DeviceClassLister) over Railyard's class and the stand-in's:
// what tests and simulations that run the real allocator against the
// stand-in's slices need.
type Classes map[string]*resourceapi.DeviceClass

// NewClasses holds dra.DeviceClass() and DeviceClass().
func NewClasses() Classes {
	return Classes{dra.DeviceClassName: dra.DeviceClass(), DeviceClassName: DeviceClass()}
}

// List returns every class.
func (c Classes) List() ([]*resourceapi.DeviceClass, error) {
	out := make([]*resourceapi.DeviceClass, 0, len(c))
	for _, dc := range c {
		out = append(out, dc)
	}
	return out, nil
}

// Get returns the class named name.
func (c Classes) Get(name string) (*resourceapi.DeviceClass, error) {
	if dc, ok := c[name]; ok {
		return dc, nil
	}
	return nil, fmt.Errorf("device class %q not found", name)
}
