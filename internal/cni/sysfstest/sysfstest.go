package sysfstest

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
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

// AddGID writes GID entry index of Ethernet port 1 of RDMA device dev as
// the kernel shows it in class/infiniband/<dev>/ports/1: gids/<index>
// (gid, in the kernel's eight groups of four hex digits), and
// gid_attrs/types/<index> and ndevs/<index> (typ "RoCE v2", the netdev).
func (t *Tree) AddGID(dev string, index int, gid net.IP, typ, ndev string) error {
	port := filepath.Join(t.Root, "class/infiniband", dev, "ports/1")
	g := gid.To16()
	groups := make([]string, 8)
	for i := range groups {
		groups[i] = fmt.Sprintf("%02x%02x", g[2*i], g[2*i+1])
	}
	files := map[string]string{
		"link_layer":                             "Ethernet",
		fmt.Sprintf("gids/%d", index):            strings.Join(groups, ":"),
		fmt.Sprintf("gid_attrs/types/%d", index): typ,
		fmt.Sprintf("gid_attrs/ndevs/%d", index): ndev,
	}
	for rel, v := range files {
		p := filepath.Join(port, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, []byte(v+"\n"), 0o644); err != nil {
			return err
		}
	}
	return nil
}
