package containerdev

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/railyard-io/railyard/internal/pciaddr"
)

// DevInfoVersion is the device-info-spec version Railyard writes.
const DevInfoVersion = "1.1.0"

// ErrNoPCIAddress is NewDevInfo's error for a device without a valid PCI
// address: a "pci" document must name one.
var ErrNoPCIAddress = errors.New("containerdev: a device-info document of type pci needs a PCI address")

// DevInfo is the device-info-spec 1.1 document of a PCI device, which
// Multus copies into the pod's network-status annotation. The spec makes
// pci-address required for type "pci": it is never omitted, and
// NewDevInfo refuses a device without one.
type DevInfo struct {
	Type    string     `json:"type"`
	Version string     `json:"version"`
	PCI     DevInfoPCI `json:"pci"`
}

// DevInfoPCI is the "pci" part of a DevInfo.
type DevInfoPCI struct {
	PCIAddress   string `json:"pci-address"`
	RDMADevice   string `json:"rdma-device,omitempty"`
	PFPCIAddress string `json:"pf-pci-address,omitempty"`
}

// NewDevInfo is the document of the device at pci (a share's: its NIC),
// with its RDMA device and, for a VF, its PF (pf "" or pci itself is left
// out: a PF has no PF).
func NewDevInfo(pci, pf, rdma string) (DevInfo, error) {
	if _, err := pciaddr.Parse(pci); err != nil {
		return DevInfo{}, fmt.Errorf("%w: %w", ErrNoPCIAddress, err)
	}
	d := DevInfo{Type: "pci", Version: DevInfoVersion, PCI: DevInfoPCI{PCIAddress: pci, RDMADevice: rdma}}
	if pf != pci {
		d.PCI.PFPCIAddress = pf
	}
	return d, nil
}

// DevInfoPath is a device plugin's device-info file of a device, named the
// way Multus (network-attachment-definition-client) looks it up:
// <dir>/<resource with / as ->-<id with / as ->-device.json.
func DevInfoPath(dir, resource, id string) string {
	return filepath.Join(dir, strings.ReplaceAll(resource, "/", "-")+"-"+strings.ReplaceAll(id, "/", "-")+"-device.json")
}
