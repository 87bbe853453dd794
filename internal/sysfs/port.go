package sysfs

import (
	"path/filepath"
	"strconv"
)

// PortState reads and parses an RDMA port's state ("ACTIVE").
func (f FS) PortState(rdma string, port int) (string, error) {
	s, err := f.ReadString(filepath.Join("class/infiniband", rdma, "ports", strconv.Itoa(port), "state"))
	if err != nil {
		return "", err
	}
	return ParsePortState(s)
}

// WatchPaths are the directories whose file events mean a model read from
// this tree may be stale: the PCI device list (VFs created or removed,
// hot-plug), the RDMA and network device lists, and each given RDMA port's
// directory ("mlx5_0", 1). Real sysfs raises no event when an attribute
// such as a port's state changes: poll PortState for that.
func (f FS) WatchPaths(ports map[string][]int) []string {
	paths := []string{f.Path("bus/pci/devices"), f.Path("class/infiniband"), f.Path("class/net")}
	for rdma, nums := range ports {
		for _, n := range nums {
			paths = append(paths, f.Path("class/infiniband", rdma, "ports", strconv.Itoa(n)))
		}
	}
	return paths
}
