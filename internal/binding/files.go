package binding

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	cdispec "tags.cncf.io/container-device-interface/specs-go"

	"github.com/railyard-io/railyard/internal/containerdev"
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

// containerDevices returns what b's container (same pod and container)
// gets for each of its bindings: the bound device with its pool's nodes
// (only what the binding names when the device or its pool left the
// view), and, with it, the nodes of b's own device.
func containerDevices(v *View, all []Binding, b Binding) (devs []containerdev.Device, own []string) {
	for _, o := range all {
		if o.Pod != b.Pod || o.Container != b.Container {
			continue
		}
		cd := containerdev.Device{Resource: o.Resource, PCI: o.Device, PF: o.Device, Rail: -1}
		if p, ok := v.PoolByResource(o.Resource); ok {
			d, _ := p.Device(o.Device)
			if d.ID != "" {
				cd.PF, cd.Rail, cd.RDMA = d.PF, d.Rail, d.RDMA
			}
			opts := containerdev.Options{RDMACM: p.RDMACM, UMAD: p.UMAD, ISSM: p.ISSM}
			cd.Nodes = opts.Nodes(d.Uverbs, d.UMAD, d.ISSM)
		}
		if o.Token == b.Token {
			own = cd.Nodes
		}
		devs = append(devs, cd)
	}
	return devs, own
}

// renderSpec is the CDI spec of token b: b's device nodes, and the
// environment of b's whole container, so every token of a container sets
// the same values and no variable conflicts.
func renderSpec(v *View, all []Binding, b Binding) ([]byte, error) {
	devs, own := containerDevices(v, all, b)
	dev := cdispec.Device{Name: b.Token}
	dev.ContainerEdits.DeviceNodes = containerdev.CDINodes(v.DevRoot, own)
	dev.ContainerEdits.Env = containerdev.Env(devs, containerdev.EnvOptions{NCCLIBHCA: v.NCCLIBHCA, NCCL: v.NCCL}).Strings()
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
	pf, rdma := "", ""
	if p, ok := v.PoolByResource(b.Resource); ok {
		if d, ok := p.Device(b.Device); ok {
			pf, rdma = d.PF, d.RDMA
		}
	}
	doc, err := containerdev.NewDevInfo(b.Device, pf, rdma)
	if err != nil {
		return nil, fmt.Errorf("binding of token %s: %w", b.Token, err)
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
			if err := s.writeIfChanged(v.DevInfoDir, containerdev.DevInfoPath(v.DevInfoDir, b.Resource, b.Token), info, StepWriteDevInfo); err != nil {
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
		errs = append(errs, removeIfExists(containerdev.DevInfoPath(v.DevInfoDir, b.Resource, b.Token)))
	}
	return errors.Join(errs...)
}

func removeIfExists(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("binding store: %w", err)
	}
	return nil
}
