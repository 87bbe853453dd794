package agent

import (
	"fmt"

	"github.com/railyard-io/railyard/api/config/v1alpha1"
	"github.com/railyard-io/railyard/internal/deviceplugin"
	"github.com/railyard-io/railyard/internal/podresources"
	"github.com/railyard-io/railyard/internal/pool"
	"github.com/railyard-io/railyard/internal/sysfs"
)

// railGroups returns the rail groups every pool shares in "merged" mode
// (nil in "env" mode: each pool sets NCCL_IB_HCA itself).
func railGroups(cfg *v1alpha1.AgentConfig, lister podresources.Lister) (*deviceplugin.RailGroups, error) {
	if cfg.NCCLIBHCA != v1alpha1.NCCLIBHCAMerged {
		return nil, nil
	}
	g, err := deviceplugin.NewRailGroups(lister, cfg.StateDir, cfg.CDISpecDir)
	if err != nil {
		return nil, fmt.Errorf("ncclIBHCA merged: %w", err)
	}
	return g, nil
}

// madLookup returns madNodes of a device's own PCI function (its NIC's for
// a share), reading each function once: a shared pool has up to 1000
// devices per NIC.
func madLookup(fs sysfs.FS) func(pool.Device) (umad, issm string) {
	seen := map[string][2]string{}
	return func(d pool.Device) (string, string) {
		addr := d.ID
		if d.Share >= 0 {
			addr = d.PF
		}
		m, ok := seen[addr]
		if !ok {
			m[0], m[1] = madNodes(fs, addr)
			seen[addr] = m
		}
		return m[0], m[1]
	}
}
