package sysfs

import (
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/railyard-io/railyard/internal/pciaddr"
)

// PhysFn returns the PF of SR-IOV virtual function addr (its physfn link),
// or ErrNotFound when addr is not a VF.
func (f FS) PhysFn(addr string) (string, error) {
	return f.LinkBase(filepath.Join("bus/pci/devices", addr, "physfn"))
}

// VFs returns the virtfnN links of PF pf, by index; none when it has no
// SR-IOV VFs. Links that are not addresses are skipped.
func (f FS) VFs(pf string) ([]VFRef, error) {
	dir := filepath.Join("bus/pci/devices", pf)
	names, err := f.List(dir)
	if err != nil {
		return nil, err
	}
	var out []VFRef
	for _, n := range names {
		idx, ok := strings.CutPrefix(n, "virtfn")
		if !ok {
			continue
		}
		i, err := strconv.Atoi(idx)
		if err != nil || i < 0 {
			continue
		}
		addr, err := f.LinkBase(filepath.Join(dir, n))
		if err != nil || !pciaddr.IsCanonical(addr) {
			continue
		}
		out = append(out, VFRef{Index: i, PCI: addr})
	}
	slices.SortFunc(out, func(a, b VFRef) int { return a.Index - b.Index })
	return out, nil
}

// CheckPCIBus fails when the tree has no PCI bus (bus/pci/devices): a
// wrong sysfs root.
func (f FS) CheckPCIBus() error {
	if err := f.statDir(f.rel("bus/pci/devices")); err != nil {
		return fmt.Errorf("no PCI bus under %s: %w", f.Root, err)
	}
	return nil
}
