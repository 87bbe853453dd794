package fakesysfs

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
)

// ConfigSpace describes the config space image WriteConfig writes.
type ConfigSpace struct {
	Vendor, Device uint16
	// ACS, when true, gives the function an ACS extended capability whose
	// control register is ACSControl. It sits after an AER capability
	// (0x100 -> 0x148), as on real switch ports, so readers must walk the
	// list.
	ACS        bool
	ACSControl uint16
	// Size is the image size: 4096 (PCIe, what root reads), 256, or 64
	// (what an unprivileged reader gets). 0 means 4096.
	Size int
}

// Config returns the config space image c describes.
func (c ConfigSpace) Config() []byte {
	size := c.Size
	if size == 0 {
		size = 4096
	}
	b := make([]byte, 4096)
	binary.LittleEndian.PutUint16(b[0:], c.Vendor)
	binary.LittleEndian.PutUint16(b[2:], c.Device)
	const aer, acs = 0x100, 0x148
	if c.ACS {
		// AER (ID 0x0001, version 2) pointing at ACS (ID 0x000d, version 1).
		binary.LittleEndian.PutUint32(b[aer:], 0x0001|2<<16|acs<<20)
		binary.LittleEndian.PutUint32(b[acs:], 0x000d|1<<16)
		binary.LittleEndian.PutUint16(b[acs+4:], 0x005f) // SV TB RR CR UF DT capable
		binary.LittleEndian.PutUint16(b[acs+6:], c.ACSControl)
	} else {
		binary.LittleEndian.PutUint32(b[aer:], 0x0001|2<<16) // AER only
	}
	return b[:size]
}

// WriteConfig writes a PCI function's sysfs "config" file.
func WriteConfig(root, addr string, c ConfigSpace) error {
	dir, err := resolve(root, addr)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(root, dir, "config"), c.Config(), 0o644); err != nil {
		return fmt.Errorf("fakesysfs: %w", err)
	}
	return nil
}
