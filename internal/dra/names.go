package dra

import (
	"errors"
	"fmt"
	"strings"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/dynamic-resource-allocation/deviceattribute"

	"github.com/railyard-io/railyard/internal/pciaddr"
)

// DriverName is the DRA driver name of Railyard's RDMA devices: the
// ResourceSlices' spec.driver and the domain a DeviceClass selects on.
const DriverName = "rdma.railyard.io"

// Domain is the domain of Railyard's own device attributes
// ("railyard.io/rail"); CEL reads them as device.attributes["railyard.io"].
const Domain = "railyard.io"

// Standard attributes. pcieRoot's name comes from the library; pciBusID and
// numaNode are standard too (pciBusID since k8s.io/dynamic-resource-allocation
// v0.36, numaNode by KEP-6072 in v0.37), spelled here with the library's
// prefix because v0.35 has no constants for them.
const (
	AttrPCIeRoot = deviceattribute.StandardDeviceAttributePCIeRoot
	AttrPCIBusID = resourceapi.QualifiedName(deviceattribute.StandardDeviceAttributePrefix + "pciBusID")
	AttrNUMANode = resourceapi.QualifiedName(deviceattribute.StandardDeviceAttributePrefix + "numaNode")
)

// Railyard's attributes (see docs/dra.md for each one's meaning).
const (
	// AttrPool is the Railyard pool publishing the device
	// ("railyard.io/rdma_vf"): what a pool's DeviceClass selects
	// (PoolDeviceClass).
	AttrPool         = resourceapi.QualifiedName(Domain + "/pool")
	AttrRDMADevice   = resourceapi.QualifiedName(Domain + "/rdmaDevice")
	AttrLinkLayer    = resourceapi.QualifiedName(Domain + "/linkLayer")
	AttrSpeedGbps    = resourceapi.QualifiedName(Domain + "/speedGbps")
	AttrIsVF         = resourceapi.QualifiedName(Domain + "/isVF")
	AttrVFIndex      = resourceapi.QualifiedName(Domain + "/vfIndex")
	AttrPFPCIAddress = resourceapi.QualifiedName(Domain + "/pfPCIAddress")
	AttrRail         = resourceapi.QualifiedName(Domain + "/rail")
	AttrLeaf         = resourceapi.QualifiedName(Domain + "/leaf")
	AttrPCIeSwitch   = resourceapi.QualifiedName(Domain + "/pcieSwitch")
	AttrPCIeRootPort = resourceapi.QualifiedName(Domain + "/pcieRootPort")
	AttrVendorID     = resourceapi.QualifiedName(Domain + "/vendorID")
	AttrDeviceID     = resourceapi.QualifiedName(Domain + "/deviceID")
	AttrBestGPUClass = resourceapi.QualifiedName(Domain + "/bestGPUClass")
	// GPUClassPrefix starts the per-GPU class attributes:
	// "railyard.io/gpu_0000_1b_00_0" = "PIX" (see GPUClassAttribute).
	GPUClassPrefix = Domain + "/gpu_"
)

// ErrName is wrapped by the errors of DeviceName and PoolName.
var ErrName = errors.New("invalid DRA name")

// DeviceName names the device at a PCI address: "pci-" and the canonical
// address with ':' and '.' as '-' ("0000:18:00.2" -> "pci-0000-18-00-2"),
// a DNS label that depends on nothing but the address, so it is the same
// across agent restarts and while the device's netdev lives in a pod.
func DeviceName(pci string) (string, error) {
	a, err := pciaddr.Parse(pci)
	if err != nil {
		return "", fmt.Errorf("%w: device: %w", ErrName, err)
	}
	var buf [20]byte
	canonical := a.Append(buf[:0])
	b := make([]byte, 0, len("pci-")+len(canonical))
	b = append(b, "pci-"...)
	for _, c := range canonical {
		if c == ':' || c == '.' {
			c = '-'
		}
		b = append(b, c)
	}
	return string(b), nil
}

// PCIAddress is the inverse of DeviceName: the canonical PCI address a
// device name was made from. It accepts only names DeviceName makes (one
// spelling per address), as a claim's allocation result names them.
func PCIAddress(device string) (string, error) {
	rest, ok := strings.CutPrefix(device, "pci-")
	parts := strings.Split(rest, "-")
	if !ok || len(parts) != 4 {
		return "", fmt.Errorf("%w: %q is not pci-DDDD-BB-DD-F", ErrName, device)
	}
	a, err := pciaddr.Parse(parts[0] + ":" + parts[1] + ":" + parts[2] + "." + parts[3])
	if err != nil {
		return "", fmt.Errorf("%w: %q: %w", ErrName, device, err)
	}
	if name, _ := DeviceName(a.String()); name != device {
		return "", fmt.Errorf("%w: %q is not canonical (%q)", ErrName, device, name)
	}
	return a.String(), nil
}

// GPUClassAttribute is the attribute holding a device's distance class to
// the GPU at gpuPCI: "railyard.io/gpu_0000_1b_00_0" (the ID is a C
// identifier of at most 25 characters, within the API's 32).
func GPUClassAttribute(gpuPCI string) (resourceapi.QualifiedName, error) {
	a, err := pciaddr.Parse(gpuPCI)
	if err != nil {
		return "", fmt.Errorf("%w: GPU: %w", ErrName, err)
	}
	return resourceapi.QualifiedName(GPUClassPrefix + strings.NewReplacer(":", "_", ".", "_").Replace(a.String())), nil
}

// PoolName is the DRA pool of one Railyard pool on one node:
// "<node>/<name>" where name is the part of the pool's resource name after
// its domain, lower-cased, with '_' as '-' ("railyard.io/rdma_vf_a" on
// node "n1" -> "n1/rdma-vf-a"). DRA pool names are unique per driver in the
// whole cluster, hence the node.
func PoolName(node, pool string) (string, error) {
	name := poolBase(pool)
	if errs := validation.IsDNS1123Subdomain(node); len(errs) > 0 {
		return "", fmt.Errorf("%w: node %q: %s", ErrName, node, strings.Join(errs, "; "))
	}
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		return "", fmt.Errorf("%w: pool %q gives %q: %s", ErrName, pool, name, strings.Join(errs, "; "))
	}
	full := node + "/" + name
	if len(full) > resourceapi.PoolNameMaxLength {
		return "", fmt.Errorf("%w: pool name %q is longer than %d", ErrName, full, resourceapi.PoolNameMaxLength)
	}
	return full, nil
}

// poolBase is a Railyard pool's name after its domain, lower-cased, "_"
// as "-" ("railyard.io/rdma_vf" is "rdma-vf").
func poolBase(pool string) string {
	if i := strings.LastIndexByte(pool, '/'); i >= 0 {
		pool = pool[i+1:]
	}
	return strings.ReplaceAll(strings.ToLower(pool), "_", "-")
}
