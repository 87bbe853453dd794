package sysfs

import (
	"path/filepath"
	"strings"
)

// MADDevices returns the management datagram char devices of a PCI
// function's RDMA device (infiniband_mad/): its first "umadN" (subnet
// management tools such as ibstat, perftest's -R) and "issmN" (a subnet
// manager's issm), "" for each absent.
func (f FS) MADDevices(addr string) (umad, issm string, err error) {
	names, err := f.List(filepath.Join("bus/pci/devices", addr, "infiniband_mad"))
	if err != nil {
		return "", "", err
	}
	for _, n := range names {
		switch {
		case umad == "" && strings.HasPrefix(n, "umad"):
			umad = n
		case issm == "" && strings.HasPrefix(n, "issm"):
			issm = n
		}
	}
	return umad, issm, nil
}
