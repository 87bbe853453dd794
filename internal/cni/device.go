package cni

import (
	"errors"
	"fmt"
	"slices"

	"strings"

	"github.com/railyard-io/railyard/internal/cni/config"
	"github.com/railyard-io/railyard/internal/cni/state"
	"github.com/railyard-io/railyard/internal/sysfs"
)

// deviceKey names the device a configuration points at, for the lock and
// the record: the share's device ID for a share of a shared NIC, its PCI
// address when it has one, else "netdev-<name>".
func deviceKey(fs sysfs.FS, c *config.Config) string {
	if c.Share != "" {
		return c.Share
	}
	if c.DeviceID != "" {
		return c.DeviceID
	}
	if pci, err := fs.NetdevPCIAddress(c.Device); err == nil {
		return pci
	}
	return "netdev-" + c.Device
}

// hostNetdev returns the netdev name of PCI function pci as sysfs shows it
// in the host namespace: its own, or for an RDMA function with none of its
// own, the netdev tied to its RDMA device's RoCE GIDs.
func hostNetdev(fs sysfs.FS, pci string) (string, error) {
	if _, err := fs.PCIDeviceDir(pci); err != nil {
		return "", invalidf("deviceID: %w", err)
	}
	names, err := fs.Netdevs(pci)
	if err != nil {
		return "", fmt.Errorf("listing netdevs of %s: %w", pci, err)
	}
	switch len(names) {
	case 0:
		// An RDMA function without a netdev of its own (VMware PVRDMA)
		// carries RoCE on the netdev its GIDs are tied to.
		if devs, _ := fs.RDMADevices(pci); len(devs) == 1 {
			if n, err := fs.GIDNetdev(pci, devs[0]); err == nil {
				return n, nil
			}
		}
		return "", invalidf("deviceID: PCI device %s has no network interface in the host namespace (bound to a userspace driver, or held by another plugin)", pci)
	case 1:
		return names[0], nil
	}
	return "", invalidf("deviceID: PCI device %s has %d network interfaces (%s); use device to pick one", pci, len(names), strings.Join(names, ", "))
}

// vfOf returns the PF a VF's settings are made through, or nil when pci is
// not a VF.
func vfOf(fs sysfs.FS, pci string) (*state.PF, error) {
	pf, err := fs.PhysFn(pci)
	if errors.Is(err, sysfs.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading physfn of %s: %w", pci, err)
	}
	vfs, err := fs.VFs(pf)
	if err != nil {
		return nil, fmt.Errorf("listing the VFs of PF %s: %w", pf, err)
	}
	i := slices.IndexFunc(vfs, func(v sysfs.VFRef) bool { return v.PCI == pci })
	if i < 0 {
		return nil, fmt.Errorf("VF %s is not among the virtfn links of its PF %s", pci, pf)
	}
	pfNet, err := fs.Netdevs(pf)
	if err != nil || len(pfNet) == 0 {
		return nil, fmt.Errorf("PF %s of VF %s has no netdev in the host namespace (needed for VF settings)", pf, pci)
	}
	return &state.PF{Netdev: pfNet[0], PCI: pf, VF: vfs[i].Index}, nil
}

// rdmaOf returns the RDMA device of PCI function pci.
func rdmaOf(fs sysfs.FS, pci string) (string, error) {
	devs, err := fs.RDMADevices(pci)
	if err != nil {
		return "", fmt.Errorf("listing RDMA devices of %s: %w", pci, err)
	}
	if len(devs) == 0 {
		return "", invalidf("rdma: PCI device %s has no RDMA device (no infiniband/ directory)", pci)
	}
	return devs[0], nil
}
