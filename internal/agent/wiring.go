package agent

import (
	"fmt"

	"github.com/railyard-io/railyard/api/config/v1alpha1"
	"github.com/railyard-io/railyard/internal/containerdev"
	"github.com/railyard-io/railyard/internal/deviceplugin"
	"github.com/railyard-io/railyard/internal/podresources/podlist"
)

// ncclOptions is the configuration's NCCL settings, as every delivery
// path hands them to containerdev.Env.
func ncclOptions(cfg *v1alpha1.AgentConfig) containerdev.NCCL {
	return containerdev.NCCL{CrossNIC: cfg.NCCLCrossNIC, Profile: cfg.NCCLProfile, SocketIfname: cfg.NCCLSocketIfname, IBAddrFamily: cfg.NCCLIBAddrFamily}
}

// railGroups returns the rail groups every pool shares in "merged" mode
// (nil in "env" mode: each pool sets NCCL_IB_HCA itself).
func railGroups(cfg *v1alpha1.AgentConfig, lister podlist.Lister) (*deviceplugin.RailGroups, error) {
	if cfg.NCCLIBHCA != v1alpha1.NCCLIBHCAMerged {
		return nil, nil
	}
	g, err := deviceplugin.NewRailGroups(lister, cfg.StateDir, cfg.CDISpecDir)
	if err != nil {
		return nil, fmt.Errorf("ncclIBHCA merged: %w", err)
	}
	return g, nil
}
