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

// allocatesOnly are the IPAM plugins whose ADD only allocates, never
// looking at the pod's namespace or interface (containernetworking/plugins
// v1.9.1: host-local's cmdAdd reads its configuration and resolvConf and
// allocates in its data directory; static's returns the configured
// addresses). ADD runs them while the kernel moves the device into the
// pod; any other (dhcp leases on the interface in the pod) runs once the
// interface is there, as before.
var allocatesOnly = map[string]bool{"host-local": true, "static": true}

// ipamAdd is an IPAM ADD started before the device reaches the pod.
type ipamAdd struct {
	done chan struct{}
	res  types.Result
	err  error
}

// startIPAM starts the IPAM ADD of an allocate-only plugin on its own
// goroutine, after the staged record is durable (the allocation outlives
// a power loss; the record that releases it must be on disk first). nil
// when the configuration has no such IPAM.
func (p *Plugin) startIPAM(ctx context.Context, s *session, a Args) *ipamAdd {
	if !allocatesOnly[s.cfg.IPAMType] {
		return nil
	}
	r := &ipamAdd{done: make(chan struct{})}
	go func() {
		defer close(r.done)
		if r.err = s.recordDurable(); r.err != nil {
			return
		}
		r.res, r.err = p.IPAM.Exec(ctx, "ADD", s.cfg.IPAMType, s.cfg.Raw, a)
	}()
	return r
}

// wait waits for the started ADD and returns its result.
func (r *ipamAdd) wait() (types.Result, error) {
	<-r.done
	return r.res, r.err
}
