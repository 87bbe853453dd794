package sysfstest

import (
	"fmt"
	"os"
	"path/filepath"
)

// Tree is a fake sysfs rooted at Root.
type Tree struct {
	Root string
}

// New creates an empty tree at root.
func New(root string) (*Tree, error) {
	if err := os.MkdirAll(filepath.Join(root, "bus/pci/devices"), 0o755); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(root, "class/net"), 0o755); err != nil {
		return nil, err
	}
	return &Tree{Root: root}, nil
}

func (t *Tree) dev(bdf string) string { return filepath.Join(t.Root, "bus/pci/devices", bdf) }

// AddNetdev adds PCI function bdf with netdev ifname:
// bus/pci/devices/<bdf>/net/<ifname> and class/net/<ifname>/device.
func (t *Tree) AddNetdev(bdf, ifname string) error {
	if err := os.MkdirAll(filepath.Join(t.dev(bdf), "net", ifname), 0o755); err != nil {
		return err
	}
	cls := filepath.Join(t.Root, "class/net", ifname)
	if err := os.MkdirAll(cls, 0o755); err != nil {
		return err
	}
	return os.Symlink("../../../bus/pci/devices/"+bdf, filepath.Join(cls, "device"))
}

// AddRDMA adds RDMA device dev to PCI function bdf (infiniband/<dev>).
func (t *Tree) AddRDMA(bdf, dev string) error {
	return os.MkdirAll(filepath.Join(t.dev(bdf), "infiniband", dev), 0o755)
}

// AddVF links VF vfBDF as virtual function index of PF pfBDF (physfn and
// virtfn<index> links). Both functions must exist.
func (t *Tree) AddVF(pfBDF string, index int, vfBDF string) error {
	for _, b := range []string{pfBDF, vfBDF} {
		if err := os.MkdirAll(t.dev(b), 0o755); err != nil {
			return err
		}
	}
	if err := os.Symlink("../"+pfBDF, filepath.Join(t.dev(vfBDF), "physfn")); err != nil {
		return err
	}
	return os.Symlink("../"+vfBDF, filepath.Join(t.dev(pfBDF), fmt.Sprintf("virtfn%d", index)))
}

// AddGIDNetdev ties the RoCE GIDs of port 1 of RDMA device dev of function
// bdf to netdev ifname (infiniband/<dev>/ports/1/gid_attrs/ndevs/0), as
// the kernel does for a function whose netdev is another's (PVRDMA).
func (t *Tree) AddGIDNetdev(bdf, dev, ifname string) error {
	dir := filepath.Join(t.dev(bdf), "infiniband", dev, "ports/1/gid_attrs/ndevs")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "0"), []byte(ifname+"\n"), 0o644)
}
