package cni

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/containernetworking/cni/pkg/types"
	current "github.com/containernetworking/cni/pkg/types/100"
	"github.com/containernetworking/cni/pkg/version"

	"github.com/railyard-io/railyard/internal/cni/state"
)

// Check verifies that the interface, its addresses and (when enabled) the
// RDMA device are in the pod namespace as ADD left them.
func (p *Plugin) Check(ctx context.Context, a Args) error {
	s, err := p.open(a)
	if err != nil {
		return err
	}
	rec, err := s.store.Find(a.ContainerID, a.IfName)
	if errors.Is(err, state.ErrNoRecord) {
		if p.holdsNothing(ctx, s, a) {
			// resourceName: ADD attached nothing to a pod holding no
			// device of the pool, and still holding none is right.
			return nil
		}
		return withCode(types.ErrUnknownContainer, err)
	}
	if err != nil {
		return err
	}
	if rec.Phase != state.PhaseAttached {
		return fmt.Errorf("attachment of device %s is %s, not attached", rec.Key, rec.Phase)
	}
	o := p.Ops
	if ok, err := o.NetnsExists(ctx, a.Netns); err != nil {
		return fmt.Errorf("network namespace %s: %w", a.Netns, err)
	} else if !ok {
		return fmt.Errorf("network namespace %s is gone", a.Netns)
	}
	l, err := o.Link(ctx, a.Netns, a.IfName)
	if err != nil {
		return fmt.Errorf("interface %s: %w", a.IfName, err)
	}
	switch {
	case l.Alias != rec.Marker:
		return fmt.Errorf("interface %s in %s is not device %s (alias %q)", a.IfName, a.Netns, rec.Key, l.Alias)
	case !l.Up:
		return fmt.Errorf("interface %s is down", a.IfName)
	case s.cfg.MTU != 0 && l.MTU != s.cfg.MTU:
		return fmt.Errorf("interface %s has MTU %d, want %d", a.IfName, l.MTU, s.cfg.MTU)
	case s.cfg.MAC != nil && l.MAC.String() != s.cfg.MAC.String():
		return fmt.Errorf("interface %s has MAC %s, want %s", a.IfName, l.MAC, s.cfg.MAC)
	}
	if rec.RDMA != "" {
		in, err := o.RDMADeviceIn(ctx, a.Netns, rec.RDMA)
		if err != nil {
			return err
		}
		if !in {
			return fmt.Errorf("RDMA device %s is not in %s", rec.RDMA, a.Netns)
		}
	}
	if err := p.checkVF(ctx, s.cfg.VF, rec); err != nil {
		return err
	}
	prev, err := prevResult(s.cfg.CNIVersion, s.cfg.RawPrevResult, rec.Result)
	if err != nil {
		return err
	}
	var ips []*current.IPConfig
	for _, ip := range prev.IPs {
		if ip.Interface == nil || (*ip.Interface < len(prev.Interfaces) && prev.Interfaces[*ip.Interface].Name == a.IfName) {
			ips = append(ips, ip)
		}
	}
	if err := o.CheckIPs(ctx, a.Netns, a.IfName, ips, prev.Routes); err != nil {
		return fmt.Errorf("addresses of %s: %w", a.IfName, err)
	}
	if s.cfg.MultiRail {
		if err := p.checkMultiRail(ctx, a, rec, ips); err != nil {
			return err
		}
	}
	if s.cfg.IPAMType != "" {
		if _, err := p.IPAM.Exec(ctx, "CHECK", s.cfg.IPAMType, s.cfg.Raw, a); err != nil {
			return err
		}
	}
	return nil
}

// prevResult decodes the runtime's prevResult, falling back to the result
// stored at ADD.
func prevResult(cniVersion string, raw, stored []byte) (*current.Result, error) {
	if len(raw) == 0 {
		if len(stored) == 0 {
			return &current.Result{}, nil
		}
		raw, cniVersion = stored, current.ImplementedSpecVersion
	}
	r, err := version.NewResult(cniVersion, raw)
	if err != nil {
		return nil, withCode(types.ErrDecodingFailure, fmt.Errorf("prevResult: %w", err))
	}
	res, err := current.NewResultFromResult(r)
	if err != nil {
		return nil, withCode(types.ErrDecodingFailure, fmt.Errorf("prevResult: %w", err))
	}
	return res, nil
}

// Status reports whether the plugin can serve ADD: the state directory is
// writable, the sysfs root readable, the RDMA subsystem in exclusive netns
// mode when rdma is set, and the IPAM plugin ready.
func (p *Plugin) Status(ctx context.Context, a Args) error {
	s, err := p.openNetwork(a)
	if err != nil {
		return err
	}
	unavailable := func(err error) error { return withCode(types.ErrPluginNotAvailable, err) }
	if err := os.MkdirAll(s.cfg.StateDir, 0o700); err != nil {
		return unavailable(fmt.Errorf("state directory: %w", err))
	}
	f, err := os.CreateTemp(s.cfg.StateDir, ".status-*")
	if err != nil {
		return unavailable(fmt.Errorf("state directory %s is not writable: %w", s.cfg.StateDir, err))
	}
	_ = f.Close()
	_ = os.Remove(f.Name())
	if err := s.fs.CheckPCIBus(); err != nil {
		return unavailable(fmt.Errorf("sysfs root %s: %w", s.cfg.SysfsRoot, err))
	}
	if s.cfg.RDMA {
		mode, err := p.Ops.RDMANetnsMode(ctx)
		if err != nil {
			return unavailable(fmt.Errorf("rdma: %w", err))
		}
		if mode != "exclusive" {
			return unavailable(fmt.Errorf("rdma: the RDMA subsystem is in %q netns mode, \"exclusive\" is needed", mode))
		}
	}
	if s.cfg.IPAMType != "" {
		if _, err := p.IPAM.Exec(ctx, "STATUS", s.cfg.IPAMType, s.cfg.Raw, a); err != nil {
			return unavailable(err)
		}
	}
	return nil
}
