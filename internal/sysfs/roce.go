package sysfs

import (
	"path/filepath"
)

// GIDNetdev returns the netdev the kernel tied to the RoCE GIDs of RDMA
// device dev of PCI function addr (infiniband/<dev>/ports/N/gid_attrs/
// ndevs/I, first port and index that name one), or ErrNotFound. A
// function whose RDMA device has no netdev of its own (VMware's PVRDMA,
// paired with the vmxnet3 on function 0 of its slot) carries its RoCE
// traffic and addresses on that netdev.
func (f FS) GIDNetdev(addr, dev string) (string, error) {
	ports := filepath.Join("bus/pci/devices", addr, "infiniband", dev, "ports")
	nums, err := f.List(ports)
	if err != nil {
		return "", err
	}
	for _, p := range nums {
		dir := filepath.Join(ports, p, "gid_attrs/ndevs")
		idx, err := f.List(dir)
		if err != nil {
			continue
		}
		for _, i := range idx {
			if name, err := f.ReadString(filepath.Join(dir, i)); err == nil && name != "" {
				return name, nil
			}
		}
	}
	return "", ErrNotFound
}
