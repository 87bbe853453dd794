package binding

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	cdispec "tags.cncf.io/container-device-interface/specs-go"
)

// CDIKind is the CDI kind of the per-token devices: a container that holds
// token T gets the CDI device "railyard.io/binding=T".
const CDIKind = "railyard.io/binding"

// cdiSpecPrefix starts the name of every per-token spec file.
const cdiSpecPrefix = "railyard.io-binding-"

// CDIName is the fully qualified CDI device name of a token.
func CDIName(token string) string { return CDIKind + "=" + token }

// CDISpecPath is the spec file of a token in dir.
func CDISpecPath(dir, token string) string {
	return filepath.Join(dir, cdiSpecPrefix+token+".json")
}

// DevInfoPath is the device-info-spec file of a device, named the way
// Multus (network-attachment-definition-client) looks it up:
// <dir>/<resource with / as ->-<id>-device.json.
func DevInfoPath(dir, resource, id string) string {
	return filepath.Join(dir, strings.ReplaceAll(resource, "/", "-")+"-"+strings.ReplaceAll(id, "/", "-")+"-device.json")
}

// EnvName is the SR-IOV device plugin's variable for a resource:
// "railyard.io/rdma_vf-a" -> "PCIDEVICE_RAILYARD_IO_RDMA_VF_A".
func EnvName(resource string) string {
	r := strings.NewReplacer(".", "_", "/", "_", "-", "_").Replace(resource)
	return "PCIDEVICE_" + strings.ToUpper(r)
}

// RDMAEnvName is the per-pool variable listing a container's RDMA devices
// of a resource in rail order ("RAILYARD_RDMA_DEVICES_RAILYARD_IO_RDMA_VF_A").
func RDMAEnvName(resource string) string {
	return "RAILYARD_RDMA_DEVICES_" + strings.TrimPrefix(EnvName(resource), "PCIDEVICE_")
}

// containerIB is where RDMA device nodes appear in a container.
const containerIB = "/dev/infiniband"

// boundDevice is a binding with its device's details (empty when the
// device left the view).
type boundDevice struct {
	Binding
	dev  Device
	pool *Pool
}

// containerDevices returns the bindings of b's container (same pod and
// container), in rail order: rail index (no rail last), PF, device.
func containerDevices(v *View, all []Binding, b Binding) []boundDevice {
	var out []boundDevice
	for _, o := range all {
		if o.Pod != b.Pod || o.Container != b.Container {
			continue
		}
		bd := boundDevice{Binding: o, dev: Device{ID: o.Device, PF: o.Device, NUMA: -1, Rail: -1}}
		if p, ok := v.PoolByResource(o.Resource); ok {
			bd.pool = p
			if d, ok := p.Device(o.Device); ok {
				bd.dev = d
			}
		}
		out = append(out, bd)
	}
	rail := func(r int) int {
		if r < 0 {
			return int(^uint(0) >> 1)
		}
		return r
	}
	slices.SortFunc(out, func(a, b boundDevice) int {
		return cmp.Or(cmp.Compare(rail(a.dev.Rail), rail(b.dev.Rail)), strings.Compare(a.dev.PF, b.dev.PF), strings.Compare(a.Device, b.Device))
	})
	return out
}

// nodes returns a bound device's device nodes: its own uverbs, then what
// its pool asks for.
func (bd boundDevice) nodes() []string {
	var out []string
	if bd.dev.Uverbs != "" {
		out = append(out, bd.dev.Uverbs)
	}
	if bd.pool == nil {
		return out
	}
	if bd.pool.RDMACM {
		out = append(out, "rdma_cm")
	}
	if bd.pool.UMAD && bd.dev.UMAD != "" {
		out = append(out, bd.dev.UMAD)
	}
	if bd.pool.ISSM && bd.dev.ISSM != "" {
		out = append(out, bd.dev.ISSM)
	}
	return out
}

// renderSpec is the CDI spec of token b: b's device nodes, and the
// environment of b's whole container, so every token of a container sets
// the same values and no variable conflicts.
func renderSpec(v *View, all []Binding, b Binding) ([]byte, error) {
	dev := cdispec.Device{Name: b.Token}
	var devs []EnvDevice
	for _, cd := range containerDevices(v, all, b) {
		nodes := cd.nodes()
		devs = append(devs, EnvDevice{Resource: cd.Resource, PCI: cd.Device, RDMA: cd.dev.RDMA, Nodes: nodes})
		if cd.Token == b.Token {
			dev.ContainerEdits.DeviceNodes = CDIDeviceNodes(v.DevRoot, nodes)
		}
	}
	env, err := ContainerEnv(devs, v.NCCLIBHCA)
	if err != nil {
		return nil, err
	}
	dev.ContainerEdits.Env = env
	spec := &cdispec.Spec{Kind: CDIKind, Devices: []cdispec.Device{dev}}
	ver, err := cdispec.MinimumRequiredVersion(spec)
	if err != nil {
		return nil, fmt.Errorf("CDI spec version: %w", err)
	}
	spec.Version = ver
	b2, err := json.Marshal(spec)
	if err != nil {
		return nil, fmt.Errorf("encoding CDI spec: %w", err)
	}
	return b2, nil
}

// renderDevInfo is the device-info-spec 1.1 document of a bound token.
func renderDevInfo(v *View, b Binding) ([]byte, error) {
	type pci struct {
		PCIAddress   string `json:"pci-address"`
		RDMADevice   string `json:"rdma-device,omitempty"`
		PFPCIAddress string `json:"pf-pci-address,omitempty"`
	}
	doc := struct {
		Type    string `json:"type"`
		Version string `json:"version"`
		PCI     pci    `json:"pci"`
	}{Type: "pci", Version: "1.1.0", PCI: pci{PCIAddress: b.Device}}
	if p, ok := v.PoolByResource(b.Resource); ok {
		if d, ok := p.Device(b.Device); ok {
			doc.PCI.RDMADevice = d.RDMA
			if d.PF != d.ID {
				doc.PCI.PFPCIAddress = d.PF
			}
		}
	}
	return json.Marshal(doc)
}

// writeFiles writes the CDI spec and device-info file of each binding of
// which, skipping files that already hold the right content.
func (s *Store) writeFiles(v *View, all, which []Binding) error {
	for _, b := range which {
		if v.CDISpecDir != "" {
			spec, err := renderSpec(v, all, b)
			if err != nil {
				return err
			}
			if err := s.writeIfChanged(v.CDISpecDir, CDISpecPath(v.CDISpecDir, b.Token), spec, StepWriteSpec); err != nil {
				return err
			}
		}
		if v.DevInfoDir != "" {
			info, err := renderDevInfo(v, b)
			if err != nil {
				return err
			}
			if err := s.writeIfChanged(v.DevInfoDir, DevInfoPath(v.DevInfoDir, b.Resource, b.Token), info, StepWriteDevInfo); err != nil {
				return err
			}
		}
	}
	return nil
}

func (s *Store) writeIfChanged(dir, path string, b []byte, step string) error {
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, b) {
		return nil
	}
	if err := s.fault(step); err != nil {
		return err
	}
	return s.writeAtomic(dir, path, b, false)
}

// removeFiles removes the CDI spec and device-info file of a released
// binding, before the release is committed: a spec never outlives its
// binding, so a container can never get a released device.
func (s *Store) removeFiles(v *View, b Binding) error {
	if v == nil {
		return nil
	}
	if err := s.fault(StepRemoveSpec); err != nil {
		return err
	}
	var errs []error
	if v.CDISpecDir != "" {
		errs = append(errs, removeIfExists(CDISpecPath(v.CDISpecDir, b.Token)))
	}
	if v.DevInfoDir != "" {
		errs = append(errs, removeIfExists(DevInfoPath(v.DevInfoDir, b.Resource, b.Token)))
	}
	return errors.Join(errs...)
}

func removeIfExists(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("binding store: %w", err)
	}
	return nil
}
