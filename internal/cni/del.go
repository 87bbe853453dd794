package cni

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/railyard-io/railyard/internal/cni/state"
	"github.com/railyard-io/railyard/internal/deviceid"
	"github.com/railyard-io/railyard/internal/netops"
)

// Del detaches the interface a.IfName of container a.ContainerID. It
// succeeds when repeated, when the namespace is gone, when the record is
// missing (then it recovers the original name from the alias marker) and
// when the device now belongs to another attachment (then it leaves the
// device alone and only releases this attachment's addresses).
func (p *Plugin) Del(ctx context.Context, a Args) (err error) {
	s := p.openDel(a)
	defer func() {
		if err == nil { // the device is back on the host: its binding may go
			p.releaseBinding(ctx, s, a)
		}
	}()
	key := s.key
	if rec, err := s.store.Find(a.ContainerID, a.IfName); err == nil {
		key = rec.Key
	}
	var rec *state.Record
	if key != "" {
		unlock, err := s.lock(ctx, key)
		if err != nil {
			return err
		}
		defer unlock()
		if rec, err = p.findAttachment(ctx, s, a, key); err != nil {
			return err
		}
		if rec != nil {
			if err := p.teardown(ctx, s.fs, rec); err != nil {
				return fmt.Errorf("releasing device %s: %w", key, err)
			}
		}
	}
	// IPAM: with the configuration received, or, when that names no IPAM
	// plugin (a configuration DEL could not read), with ADD's.
	ipamConf := s.cfg.Raw
	if s.cfg.IPAMType == "" && rec != nil && len(rec.Config) > 0 {
		ipamConf = rec.Config
	}
	if _, err := p.ipam(ctx, "DEL", ipamConf, a); err != nil {
		return err
	}
	infoFile, at := s.cfg.DeviceInfoFile, attachment{Network: s.cfg.Name, ContainerID: a.ContainerID, IfName: a.IfName}
	if rec != nil && rec.DeviceInfoFile != "" {
		infoFile, at.Network = rec.DeviceInfoFile, rec.Network
	}
	if err := p.removeDeviceInfo(infoFile, at); err != nil {
		return err
	}
	if rec != nil && rec.Key == key {
		if cur, err := s.store.Get(key); err == nil && cur.ContainerID == a.ContainerID && cur.IfName == a.IfName {
			return s.store.Delete(key)
		}
	}
	return nil
}

// findAttachment returns this attachment's record of device key, rebuilt
// from the interface's alias marker when the record is gone, or nil when
// the device is not attached for this container and interface.
func (p *Plugin) findAttachment(ctx context.Context, s *session, a Args, key string) (*state.Record, error) {
	rec, err := s.store.Get(key)
	switch {
	case errors.Is(err, state.ErrNoRecord):
	case err != nil:
		return nil, err
	case rec.ContainerID == a.ContainerID && rec.IfName == a.IfName:
		return rec, nil
	}
	// No record, or the device now serves another attachment.
	return p.recoverRecord(ctx, s, a, key)
}

// recoverRecord rebuilds what can be known of an attachment whose record is
// gone from the alias marker on the interface in the pod: the device key and
// the original name. MTU, MAC and VF settings cannot be known and stay as
// they are. It returns nil when there is nothing of ours to release.
func (p *Plugin) recoverRecord(ctx context.Context, s *session, a Args, key string) (*state.Record, error) {
	if a.Netns == "" {
		return nil, nil
	}
	ok, err := p.Ops.NetnsExists(ctx, a.Netns)
	if err != nil || !ok {
		return nil, err
	}
	l, err := p.Ops.Link(ctx, a.Netns, a.IfName)
	if errors.Is(err, netops.ErrLinkNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	mkey, orig, ok := parseMarker(l.Alias)
	byName := s.cfg.Device != "" && orig == s.cfg.Device
	if !ok || (mkey != key && !byName) {
		return nil, nil // not an interface railyard-cni attached for this device
	}
	key = mkey
	rec := &state.Record{
		Key: key, ContainerID: a.ContainerID, IfName: a.IfName, Netns: a.Netns,
		TempName: tempName(key, a.ContainerID, a.IfName), Marker: l.Alias,
		Orig: netops.Link{Name: orig, Index: -1},
	}
	if pci, _, err := deviceid.ParseShare(key); err == nil {
		rec.PCI, rec.Kind, rec.Parent = pci, state.KindMacvlan, orig
		return rec, nil
	}
	if !strings.HasPrefix(key, "netdev-") {
		rec.PCI = key
	}
	if s.cfg.RDMA && rec.PCI != "" {
		if dev, err := rdmaOf(s.fs, rec.PCI); err == nil {
			rec.RDMA = dev
		}
	}
	return rec, nil
}
