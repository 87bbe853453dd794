package fakesysfs

import (
	"fmt"
	"path/filepath"
	"strconv"
)

// Link is what a generated function's PCIe link attributes say: the speed
// (GT/s per lane) and width it trained at, and its capability.
type Link struct {
	Speed, MaxSpeed float64
	Width, MaxWidth int
}

// defaultLink is the link every generated PCIe function (not a VF) gets:
// PCIe 4.0 x16, trained at its capability.
var defaultLink = Link{Speed: 16, MaxSpeed: 16, Width: 16, MaxWidth: 16}

// linkSpeed spells a speed as the kernel does since 5.x
// (PCI_SPEED2STR: "16.0 GT/s PCIe", "2.5 GT/s PCIe").
func linkSpeed(v float64) string {
	return strconv.FormatFloat(v, 'f', 1, 64) + " GT/s PCIe"
}

// writeLink writes a function's current_link_* and max_link_* attributes.
func writeLink(root, dir string, l Link) error {
	g := &generator{root: root}
	for _, a := range []struct{ name, value string }{
		{"current_link_speed", linkSpeed(l.Speed)},
		{"max_link_speed", linkSpeed(l.MaxSpeed)},
		{"current_link_width", strconv.Itoa(l.Width)},
		{"max_link_width", strconv.Itoa(l.MaxWidth)},
	} {
		if err := g.write(filepath.Join(dir, a.name), a.value); err != nil {
			return err
		}
	}
	return nil
}

// SetPCIeLink rewrites the link attributes of the PCI function at addr, as
// a card that trained below its capability (a bad riser, a dirty
// connector, a BIOS slot setting) shows them.
func SetPCIeLink(root, addr string, l Link) error {
	dir, err := resolve(root, addr)
	if err != nil {
		return err
	}
	if err := writeLink(root, dir, l); err != nil {
		return fmt.Errorf("fakesysfs: link of %s: %w", addr, err)
	}
	return nil
}

// AddPCISlot registers a physical slot (bus/pci/slots/<name>/address), as
// platforms that describe their slots (ACPI, PCIe hotplug) do; address is
// the device's address without the function ("0000:17:00").
func AddPCISlot(root, name, address string) error {
	g := &generator{root: root}
	return g.write(filepath.Join("bus/pci/slots", name, "address"), address)
}
