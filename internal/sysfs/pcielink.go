package sysfs

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/railyard-io/railyard/internal/pciaddr"
)

// PCIeLink is a PCIe function's link as the kernel reports it
// (drivers/pci/pci-sysfs.c): the speed and width the link trained at
// (current_link_speed, current_link_width) and the most the function
// supports (max_link_speed, max_link_width). Speeds are in GT/s per lane.
type PCIeLink struct {
	Speed, MaxSpeed float64
	Width, MaxWidth int
}

// SpeedDegraded reports a link running slower than the function supports.
func (l PCIeLink) SpeedDegraded() bool { return l.Speed < l.MaxSpeed }

// WidthDegraded reports a link with fewer lanes than the function supports.
func (l PCIeLink) WidthDegraded() bool { return l.Width < l.MaxWidth }

// String spells the link as lspci's LnkSta does, with the capability:
// "8 GT/s x8 (of 16 GT/s x16)".
func (l PCIeLink) String() string {
	g := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	return fmt.Sprintf("%s GT/s x%d (of %s GT/s x%d)", g(l.Speed), l.Width, g(l.MaxSpeed), l.MaxWidth)
}

// PCIeLinkOf reads a PCI function's link attributes. ErrNotFound when the
// function has none (no PCIe capability, a host bridge, a fake tree
// without them).
func (f FS) PCIeLinkOf(addr string) (PCIeLink, error) {
	if !pciaddr.IsCanonical(addr) {
		return PCIeLink{}, fmt.Errorf("%q is not a PCI address", addr)
	}
	dir := filepath.Join("bus/pci/devices", addr)
	var l PCIeLink
	var err error
	for _, a := range []struct {
		name  string
		speed *float64
		width *int
	}{
		{"current_link_speed", &l.Speed, nil}, {"max_link_speed", &l.MaxSpeed, nil},
		{"current_link_width", nil, &l.Width}, {"max_link_width", nil, &l.MaxWidth},
	} {
		rel := filepath.Join(dir, a.name)
		s, rerr := f.ReadString(rel)
		if rerr != nil {
			return PCIeLink{}, rerr
		}
		if a.speed != nil {
			*a.speed, err = ParseLinkSpeed(s)
		} else {
			*a.width, err = ParseLinkWidth(s)
		}
		if err != nil {
			return PCIeLink{}, fmt.Errorf("%s: %w", rel, err)
		}
	}
	return l, nil
}

// ErrLinkUnknown is returned (wrapped) for a link the kernel reports as
// "Unknown" (a link down, or a function without one, such as a VF).
var ErrLinkUnknown = errors.New("link speed unknown")

// ParseLinkSpeed parses a link speed as the kernel prints it
// ("16.0 GT/s PCIe", older kernels "8 GT/s", "2.5 GT/s") into GT/s.
func ParseLinkSpeed(s string) (float64, error) {
	f := strings.Fields(s)
	if len(f) >= 1 && strings.HasPrefix(f[0], "Unknown") {
		return 0, fmt.Errorf("%s: %w", Quote(s), ErrLinkUnknown)
	}
	if len(f) < 2 || f[1] != "GT/s" {
		return 0, fmt.Errorf("link speed %s: want \"<n> GT/s\"", Quote(s))
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil || !(v > 0 && v <= 1000) { // NaN too
		return 0, fmt.Errorf("link speed %s: not a positive number of GT/s", Quote(s))
	}
	return v, nil
}

// ParseLinkWidth parses a link width ("16"; some kernels print "x16").
// The kernel prints 0 for a link that is down.
func ParseLinkWidth(s string) (int, error) {
	v, err := strconv.Atoi(strings.TrimPrefix(strings.TrimSpace(s), "x"))
	if err != nil || v < 0 || v > 32 {
		return 0, fmt.Errorf("link width %s: want 0 to 32 lanes", Quote(s))
	}
	return v, nil
}

// PCISlots maps each physical slot's device address ("0000:17:00", no
// function) to the slot's name, from bus/pci/slots/<name>/address; empty
// when the platform registers no slots (many do not, or only some).
func (f FS) PCISlots() (map[string]string, error) {
	names, err := f.List("bus/pci/slots")
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, n := range names {
		a, err := f.ReadString(filepath.Join("bus/pci/slots", n, "address"))
		if err != nil || n == "." || n == ".." {
			continue
		}
		out[a] = Printable(n)
	}
	return out, nil
}
