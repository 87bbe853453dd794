package deviceplugin

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
)

// containerIB is where RDMA device nodes appear in a container.
const containerIB = "/dev/infiniband"

// deviceSpecs returns the device nodes of one device and the RDMA part of
// its _INFO entry. Host paths are under the configured dev root and must
// exist: a missing node would fail the container later with a worse error.
func (p *Plugin) deviceSpecs(d Device) ([]*pluginapi.DeviceSpec, map[string]string, error) {
	if d.Uverbs == "" {
		return nil, nil, errNoVerbs
	}
	names := []struct{ key, node string }{{"uverbs", d.Uverbs}}
	if p.cfg.RDMACM {
		names = append(names, struct{ key, node string }{"rdma_cm", "rdma_cm"})
	}
	if p.cfg.UMAD && d.UMAD != "" {
		names = append(names, struct{ key, node string }{"umad", d.UMAD})
	}
	if p.cfg.ISSM && d.ISSM != "" {
		names = append(names, struct{ key, node string }{"issm", d.ISSM})
	}
	specs := make([]*pluginapi.DeviceSpec, 0, len(names))
	info := map[string]string{"rdma_dev": d.RDMA}
	for _, n := range names {
		host := filepath.Join(p.cfg.DevRoot, "infiniband", n.node)
		if _, err := os.Stat(host); err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return nil, nil, fmt.Errorf("device node %s is missing", host)
			}
			return nil, nil, err
		}
		cpath := containerIB + "/" + n.node
		specs = append(specs, &pluginapi.DeviceSpec{HostPath: host, ContainerPath: cpath, Permissions: "rw"})
		info[n.key] = cpath
	}
	return specs, info, nil
}

// deviceInfoEnv is one device's entry of PCIDEVICE_<X>_INFO, in the SR-IOV
// device plugin's shape: {"generic":{"deviceID":...},"rdma":{"uverbs":...}}.
type deviceInfoEnv struct {
	Generic map[string]string `json:"generic"`
	RDMA    map[string]string `json:"rdma,omitempty"`
}

func marshalInfo(info map[string]deviceInfoEnv) (string, error) {
	b, err := json.Marshal(info)
	return string(b), err
}

// devInfo is the device-info-spec 1.1 document for a PCI device.
type devInfo struct {
	Type    string     `json:"type"`
	Version string     `json:"version"`
	PCI     devInfoPCI `json:"pci"`
}

type devInfoPCI struct {
	PCIAddress   string `json:"pci-address"`
	RDMADevice   string `json:"rdma-device,omitempty"`
	PFPCIAddress string `json:"pf-pci-address,omitempty"`
}

// writeDevInfo writes the device-info file atomically (temp file + rename)
// so Multus never reads half a document.
func writeDevInfo(dir, resource string, d Device) error {
	doc := devInfo{Type: "pci", Version: "1.1.0", PCI: devInfoPCI{PCIAddress: d.ID, RDMADevice: d.RDMA}}
	switch {
	case d.Share >= 0:
		doc.PCI.PCIAddress = d.PF // a share is its NIC, named by the file's share ID
	case d.PF != d.ID:
		doc.PCI.PFPCIAddress = d.PF
	}
	b, err := json.Marshal(doc)
	if err != nil {
		return err
	}
	path := DevInfoPath(dir, resource, d.ID)
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, b) {
		return nil // the same device given again: the file is already right
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("device info directory: %w", err)
	}
	tmp, err := os.CreateTemp(dir, ".devinfo-*")
	if err != nil {
		return fmt.Errorf("device info file: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return fmt.Errorf("device info file: %w", err)
	}
	if err := tmp.Chmod(0o444); err != nil {
		tmp.Close()
		return fmt.Errorf("device info file: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("device info file: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("device info file: %w", err)
	}
	return nil
}
