package discovery

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/railyard-io/railyard/internal/pciaddr"
	"github.com/railyard-io/railyard/internal/sysfs"
	"github.com/railyard-io/railyard/internal/topology"
)

// maxWarning bounds one warning: names and values in it come from files.
const maxWarning = 512

// checkInventory looks for what an inconsistent tree would otherwise turn
// into a silent wrong answer, repairs what the tree itself tells, and
// warns about each:
//
//   - a bridge that is in a device's sysfs path but not in bus/pci/devices
//     (or could not be read): without it the device's chain of bridges
//     ends early and its classes come out too far (PIX becomes PHB). The
//     path says where the bridge sits, so it is added as a bridge with
//     that place;
//   - an RDMA function that no NIC took: a VF whose PF is missing, has no
//     RDMA device, or does not list it among its virtfnN links;
//   - names (netdevs, RDMA and verbs devices) with control characters or
//     bytes that are not UTF-8, which printers escape and JSON encoders
//     replace.
//
// Last, every warning is made one printable line of bounded length.
func checkInventory(fs sysfs.FS, inv *topology.Inventory) {
	warn := func(path, msg string) {
		inv.Warnings = append(inv.Warnings, topology.Warning{Path: path, Message: msg})
	}
	addMissingBridges(fs, inv, warn)
	warnUnclaimed(fs, inv, warn)
	warnNames(inv, warn)
	for i, w := range inv.Warnings {
		inv.Warnings[i] = topology.Warning{Path: sysfs.Clip(w.Path, maxWarning), Message: sysfs.Clip(w.Message, maxWarning)}
	}
}

func addMissingBridges(fs sysfs.FS, inv *topology.Inventory, warn func(path, msg string)) {
	known := make(map[string]bool, len(inv.Devices))
	for _, d := range inv.Devices {
		known[d.Address] = true
	}
	// Devices appended here have parents that are known or appended too,
	// so one pass over the growing list suffices.
	for i := 0; i < len(inv.Devices); i++ {
		d := inv.Devices[i]
		if d.Parent == "" || known[d.Parent] {
			continue
		}
		chain, err := bridgeChain(fs, d.Address)
		if err != nil || len(chain) == 0 || chain[len(chain)-1] != d.Parent {
			warn(d.Parent, fmt.Sprintf("parent bridge of %s is missing from bus/pci/devices or unreadable, and its place cannot be read (%v): classes through it may be wrong", d.Address, err))
			known[d.Parent] = true
			continue
		}
		for j, b := range chain {
			if known[b] {
				continue
			}
			known[b] = true
			parent := ""
			if j > 0 {
				parent = chain[j-1]
			}
			inv.Devices = append(inv.Devices, topology.PCIDevice{Address: b, Class: 0x060400, Bridge: true, NUMA: -1, Parent: parent, HostBridge: d.HostBridge})
			warn(b, fmt.Sprintf("PCI bridge above %s is missing from bus/pci/devices or unreadable; classes use its place in the sysfs path", d.Address))
		}
	}
}

// bridgeChain returns the PCI addresses between a device's host bridge
// and the device, top first, from its resolved sysfs path.
func bridgeChain(fs sysfs.FS, addr string) ([]string, error) {
	dir, err := fs.PCIDeviceDir(addr)
	if err != nil {
		return nil, err
	}
	parts := strings.Split(filepath.ToSlash(dir), "/")
	hb := -1
	for i, p := range parts {
		if pciaddr.IsCanonicalHostBridge(p) {
			hb = i
		}
	}
	if hb < 0 || parts[len(parts)-1] != addr {
		return nil, fmt.Errorf("unexpected sysfs path %s", dir)
	}
	var chain []string
	for _, p := range parts[hb+1 : len(parts)-1] {
		if pciaddr.IsCanonical(p) {
			chain = append(chain, p)
		}
	}
	return chain, nil
}

// warnUnclaimed warns about functions with an RDMA device that are neither
// a NIC nor a VF of one: they are not offered.
func warnUnclaimed(fs sysfs.FS, inv *topology.Inventory, warn func(path, msg string)) {
	claimed := map[string]bool{}
	nics := map[string]bool{}
	for _, g := range inv.GPUs {
		claimed[g.PCI] = true
	}
	for _, n := range inv.NICs {
		claimed[n.PCI], nics[n.PCI] = true, true
		for _, vf := range n.VFs {
			claimed[vf.PCI] = true
		}
	}
	for _, d := range inv.Devices {
		if claimed[d.Address] || d.Bridge {
			continue
		}
		rdma, _ := fs.RDMADevices(d.Address)
		if len(rdma) == 0 {
			continue // not an RDMA function: nothing to offer
		}
		pf, err := fs.LinkBase(filepath.Join("bus/pci/devices", d.Address, "physfn"))
		switch {
		case err != nil:
			warn(d.Address, fmt.Sprintf("has RDMA device %s but was not read as a NIC: not offered", sysfs.Printable(rdma[0])))
		case !nics[pf] && !exists(fs.Path("bus/pci/devices", pf)):
			warn(d.Address, fmt.Sprintf("VF with RDMA device %s: its PF %s is missing: not offered", sysfs.Printable(rdma[0]), sysfs.Printable(pf)))
		case !nics[pf]:
			warn(d.Address, fmt.Sprintf("VF with RDMA device %s: its PF %s is not an RDMA NIC (or could not be read): not offered", sysfs.Printable(rdma[0]), pf))
		default:
			warn(d.Address, fmt.Sprintf("VF with RDMA device %s is not among its PF %s's virtfnN links: not offered", sysfs.Printable(rdma[0]), pf))
		}
	}
}

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

// warnNames warns about names that do not print as they are.
func warnNames(inv *topology.Inventory, warn func(path, msg string)) {
	check := func(addr, kind, name string) {
		if sysfs.NeedsEscape(name) {
			warn(addr, fmt.Sprintf("%s name %s has control characters, invisible characters or bytes that are not UTF-8: shown escaped; JSON shows invalid bytes as U+FFFD", kind, sysfs.Quote(name)))
		}
	}
	for _, n := range inv.NICs {
		for _, nd := range n.Netdevs {
			check(n.PCI, "netdev", nd)
		}
		if len(n.Netdevs) == 0 {
			check(n.PCI, "netdev", n.Netdev)
		}
		check(n.PCI, "RDMA device", n.RDMA)
		check(n.PCI, "verbs device", n.Uverbs)
		for _, vf := range n.VFs {
			check(vf.PCI, "netdev", vf.Netdev)
			check(vf.PCI, "RDMA device", vf.RDMA)
			check(vf.PCI, "verbs device", vf.Uverbs)
		}
	}
}
