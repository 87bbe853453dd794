package cni

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/containernetworking/cni/pkg/invoke"
	"github.com/containernetworking/cni/pkg/types"
)

// Args identify one CNI invocation.
type Args struct {
	ContainerID string
	Netns       string
	IfName      string
	// PluginArgs is CNI_ARGS, passed on to IPAM.
	PluginArgs string
	// Config is the network configuration (stdin).
	Config []byte
}

// IPAM runs a delegated IPAM plugin command ("ADD", "DEL", "CHECK", "GC",
// "STATUS"); only ADD returns a result.
type IPAM interface {
	Exec(ctx context.Context, command, plugin string, conf []byte, a Args) (types.Result, error)
}

// ExecIPAM finds IPAM plugins in CNIPath (CNI_PATH) and executes them.
type ExecIPAM struct {
	CNIPath string
}

var _ IPAM = ExecIPAM{}

// Exec implements IPAM.
func (e ExecIPAM) Exec(ctx context.Context, command, plugin string, conf []byte, a Args) (types.Result, error) {
	path, err := invoke.FindInPath(plugin, filepath.SplitList(e.CNIPath))
	if err != nil {
		return nil, fmt.Errorf("IPAM plugin %q: %w", plugin, err)
	}
	args := &invoke.Args{
		Command:       command,
		ContainerID:   a.ContainerID,
		NetNS:         a.Netns,
		IfName:        a.IfName,
		PluginArgsStr: a.PluginArgs,
		Path:          e.CNIPath,
	}
	if command == "ADD" {
		res, err := invoke.ExecPluginWithResult(ctx, path, conf, args, nil)
		if err != nil {
			return nil, fmt.Errorf("IPAM %s ADD: %w", plugin, err)
		}
		return res, nil
	}
	if err := invoke.ExecPluginWithoutResult(ctx, path, conf, args, nil); err != nil {
		return nil, fmt.Errorf("IPAM %s %s: %w", plugin, command, err)
	}
	return nil, nil
}
