package fakesysfs

import (
	"fmt"
	"os"
	"path/filepath"
)

// firmwareMajor is the major number of NVIDIA's (Mellanox) firmware per
// PCI device ID: the version's first field names the chip (mlxfwmanager's
// and the release notes' numbering).
var firmwareMajor = map[uint16]int{
	0x1013: 12, // ConnectX-4
	0x1015: 14, // ConnectX-4 Lx
	0x1017: 16, // ConnectX-5
	0x1019: 16, // ConnectX-5 Ex
	0x101b: 20, // ConnectX-6
	0x101d: 22, // ConnectX-6 Dx
	0x101f: 26, // ConnectX-6 Lx
	0x1021: 28, // ConnectX-7
	0xa2d6: 24, // BlueField-2
	0xa2dc: 32, // BlueField-3
}

// firmwareFor is the fw_ver a generated RDMA device gets: one release
// (.39.1002) for every ConnectX, "1.0.0" for other devices.
func firmwareFor(vendor, device uint16) string {
	if m, ok := firmwareMajor[device]; ok && vendor == 0x15b3 {
		return fmt.Sprintf("%d.39.1002", m)
	}
	return "1.0.0"
}

// SetFirmware writes an RDMA device's fw_ver, as a card flashed with
// another release shows it.
func SetFirmware(root, rdma, version string) error {
	dir := filepath.Join(root, "class/infiniband", rdma)
	if _, err := os.Stat(dir); err != nil {
		return fmt.Errorf("fakesysfs: RDMA device %s: %w", rdma, err)
	}
	return writeAtomic(filepath.Join(dir, "fw_ver"), version)
}
