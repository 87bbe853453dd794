package doctor

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/railyard-io/railyard/internal/sysfs"
)

// pcieLinks checks that every GPU and RDMA NIC, and every bridge above
// each up to its root port (which holds every bridge on the way between a
// GPU and its NICs), trained its PCIe link at its capability
// (current_link_speed/width against max_link_speed/width). A card at x8 or
// at a lower generation halves its bandwidth without any other sign.
func (n *node) pcieLinks(context.Context) []Check {
	slots, _ := n.fs.PCISlots()
	var out []Check
	for _, g := range n.topo.GPUs {
		out = append(out, n.pcieLink("GPU "+g.PCI, g.PCI, true, slots))
	}
	for _, x := range n.topo.NICs {
		out = append(out, n.pcieLink(fmt.Sprintf("%s (%s)", orDash(x.RDMA), x.PCI), x.PCI, false, slots))
	}
	return out
}

// pcieLinkFix is the fix of a degraded link.
const pcieLinkFix = "compare LnkCap and LnkSta in lspci -vv -s %s; reseat the card (and its riser or cable), " +
	"check the slot's BIOS settings (link speed, bifurcation) and that the slot is wired x16, " +
	"or move the card to a slot that is; a firmware update of the card or the switch can also fix link training"

// pcieLink checks one device's link and the links of the bridges above it.
// A GPU lowers its link speed when idle (its power management), so a GPU's
// speed below its capability, and that of the port it hangs off (the same
// link), is a warning to check under load; fewer lanes, or a NIC or switch
// link below its speed, is a failure.
func (n *node) pcieLink(subject, addr string, gpu bool, slots map[string]string) Check {
	c := Check{ID: "pcie-link", Subject: subject, Status: OK}
	own, err := n.fs.PCIeLinkOf(addr)
	if err != nil {
		c.Status, c.Summary = Skip, "cannot read the PCIe link: "+err.Error()
		return c
	}
	c.Read = append(c.Read, fmt.Sprintf("sysfs bus/pci/devices/%s/{current,max}_link_{speed,width}: %s", addr, own))
	type bad struct {
		addr string
		link sysfs.PCIeLink
		idle bool // may be a GPU's idle power saving
	}
	var degraded []bad
	if own.WidthDegraded() || own.SpeedDegraded() {
		degraded = append(degraded, bad{addr, own, gpu && !own.WidthDegraded()})
	}
	seen := map[string]bool{addr: true}
	first := true
	for d, ok := n.topo.Device(addr); ok && d.Parent != "" && !seen[d.Parent]; d, ok = n.topo.Device(d.Parent) {
		seen[d.Parent] = true
		l, err := n.fs.PCIeLinkOf(d.Parent)
		switch {
		case errors.Is(err, sysfs.ErrNotFound):
			c.Read = append(c.Read, fmt.Sprintf("bridge %s: no link attributes", d.Parent))
		case err != nil:
			c.Read = append(c.Read, fmt.Sprintf("bridge %s: %v", d.Parent, err))
		default:
			c.Read = append(c.Read, fmt.Sprintf("bridge %s: %s", d.Parent, l))
			if l.WidthDegraded() || l.SpeedDegraded() {
				degraded = append(degraded, bad{d.Parent, l, gpu && first && !l.WidthDegraded()})
			}
		}
		first = false
	}
	if len(degraded) == 0 {
		c.Summary = fmt.Sprintf("%s and every bridge above it at their capability", own)
		return c
	}
	c.Status = Warn
	var parts []string
	for _, b := range degraded {
		if !b.idle {
			c.Status = Fail
		}
		where := b.addr
		if b.addr != addr {
			where = "bridge " + b.addr
		}
		if s, ok := slots[slotAddr(b.addr)]; ok {
			where += " in slot " + s
		}
		parts = append(parts, fmt.Sprintf("%s at %s", where, b.link))
	}
	c.Summary = "PCIe link below its capability: " + strings.Join(parts, "; ")
	c.Fix = fmt.Sprintf(pcieLinkFix, degraded[0].addr)
	if c.Status == Warn {
		c.Summary += ": a GPU lowers its link speed when idle"
		c.Fix = "check again under load (nvidia-smi -q -d PCIE shows the current and max generation); if it stays low: " + c.Fix
	}
	return c
}

// slotAddr is the address a slot registers (bus/pci/slots/*/address): the
// function's, without the function number.
func slotAddr(addr string) string {
	if i := strings.LastIndexByte(addr, '.'); i > 0 {
		return addr[:i]
	}
	return addr
}
