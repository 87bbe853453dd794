package cni

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/railyard-io/railyard/internal/cni/state"
)

// deviceInfo is the device-info-spec 1.1.0 document Multus reads back into
// the pod's network-status annotation.
type deviceInfo struct {
	Type    string        `json:"type"`
	Version string        `json:"version"`
	PCI     deviceInfoPCI `json:"pci"`
}

type deviceInfoPCI struct {
	PCIAddress   string `json:"pci-address,omitempty"`
	PFPCIAddress string `json:"pf-pci-address,omitempty"`
	RDMADevice   string `json:"rdma-device,omitempty"`
}

// writeDeviceInfo writes the device-info file atomically; "" writes nothing.
func writeDeviceInfo(path string, rec *state.Record) error {
	if path == "" {
		return nil
	}
	info := deviceInfo{Type: "pci", Version: "1.1.0", PCI: deviceInfoPCI{PCIAddress: rec.PCI, RDMADevice: rec.RDMA}}
	if rec.PF != nil {
		info.PCI.PFPCIAddress = rec.PF.PCI
	}
	b, err := json.Marshal(info)
	if err != nil {
		return fmt.Errorf("encoding device info: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("writing device info %s: %w", path, err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return fmt.Errorf("writing device info %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("writing device info %s: %w", path, err)
	}
	return nil
}
