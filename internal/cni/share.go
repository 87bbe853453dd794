package cni

import (
	"context"
	"errors"
	"fmt"

	current "github.com/containernetworking/cni/pkg/types/100"

	"github.com/railyard-io/railyard/internal/cni/state"
	"github.com/railyard-io/railyard/internal/netops"
)

// A share of a shared NIC (a device ID "<pci>-s<k>" from a shared pool, as
// k8s-rdma-shared-dev-plugin hands out) gives the pod a macvlan on the NIC's
// netdev, which stays on the host for every pod sharing it; so does the
// NIC's RDMA device (the RDMA subsystem in shared netns mode). The share's
// device ID is the lock and record key, so pods sharing a NIC never wait on
// each other and two ADDs never hold one share.

// prepareShare finds the shared NIC's netdev and records the attachment.
func (p *Plugin) prepareShare(ctx context.Context, s *session, a Args) (*state.Record, error) {
	parent, err := hostNetdev(s.fs, s.cfg.DeviceID)
	if err != nil {
		return nil, err
	}
	l, err := p.Ops.Link(ctx, netops.Host, parent)
	if err != nil {
		if errors.Is(err, netops.ErrLinkNotFound) {
			return nil, invalidf("deviceID: shared NIC %s has no netdev %s in the host namespace: %w", s.cfg.DeviceID, parent, err)
		}
		return nil, err
	}
	if len(l.MAC) == 20 { // IPoIB
		return nil, invalidf("deviceID: shared NIC %s (%s) is InfiniBand (IPoIB): a macvlan needs an Ethernet (RoCE) netdev; for InfiniBand use an IPoIB child (ipoib-cni) with master %s", s.cfg.DeviceID, parent, parent)
	}
	if s.cfg.MTU > l.MTU {
		return nil, invalidf("mtu: %d exceeds the MTU %d of shared NIC %s (%s); a macvlan cannot be larger than its parent", s.cfg.MTU, l.MTU, s.cfg.DeviceID, parent)
	}
	if s.cfg.VF.Any() {
		return nil, invalidf("vlan/vlanQoS/vlanProto/spoofchk/trust/link_state/min_tx_rate/max_tx_rate/guid: %s is a share of a shared NIC, not an SR-IOV VF", s.key)
	}
	cfg := s.cfg
	return &state.Record{
		Key: s.key, Network: cfg.Name, ContainerID: a.ContainerID, IfName: a.IfName,
		Netns: a.Netns, BootID: p.BootID, Phase: state.PhaseAdding,
		PCI: cfg.DeviceID, Kind: state.KindMacvlan, Parent: parent,
		TempName: tempName(s.key, a.ContainerID, a.IfName), Marker: marker(s.key, parent),
		DeviceInfoFile: cfg.DeviceInfoFile, Config: cfg.Raw,
	}, nil
}

// attachShare creates the macvlan on the host under its temporary name,
// marks it, moves it into the pod and finishes as for a device's netdev.
func (p *Plugin) attachShare(ctx context.Context, s *session, a Args, rec *state.Record) (*current.Result, error) {
	o, host, pod := p.Ops, netops.Host, a.Netns
	if err := o.AddMacvlan(ctx, rec.Parent, rec.TempName, s.cfg.MacvlanMode); err != nil {
		return nil, err
	}
	if err := o.SetAlias(ctx, host, rec.TempName, rec.Marker); err != nil {
		return nil, err
	}
	if err := o.MoveLink(ctx, host, rec.TempName, pod); err != nil {
		return nil, err
	}
	if err := o.RenameLink(ctx, pod, rec.TempName, a.IfName); err != nil {
		return nil, err
	}
	l, err := o.Link(ctx, pod, a.IfName)
	if err != nil {
		return nil, err
	}
	return p.finish(ctx, s, a, rec, l.MTU, l.MAC)
}

// teardownMacvlan deletes the share's macvlan wherever it is: in the pod
// under the interface or temporary name, or still on the host. Each is
// deleted only when it carries the record's marker; the shared NIC is
// never touched.
func (p *Plugin) teardownMacvlan(ctx context.Context, rec *state.Record) error {
	type place struct {
		netns string
		names []string
	}
	o := p.Ops
	places := []place{{netops.Host, []string{rec.TempName}}}
	if rec.Netns != "" && rec.Netns != netops.Host {
		ok, err := o.NetnsExists(ctx, rec.Netns)
		if err != nil {
			return err
		}
		if ok {
			if err := p.removeRailRules(ctx, rec); err != nil {
				return err
			}
			places = append(places, place{rec.Netns, []string{rec.IfName, rec.TempName}})
		}
	}
	for _, pl := range places {
		for _, name := range pl.names {
			l, err := o.Link(ctx, pl.netns, name)
			if errors.Is(err, netops.ErrLinkNotFound) {
				continue
			}
			if err != nil {
				return err
			}
			if l.Alias != rec.Marker {
				continue
			}
			if err := o.DeleteLink(ctx, pl.netns, name); err != nil && !errors.Is(err, netops.ErrLinkNotFound) {
				return fmt.Errorf("deleting the macvlan of share %s: %w", rec.Key, err)
			}
		}
	}
	return nil
}
