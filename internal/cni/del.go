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
// missing or does not decode (then it recovers the original name and host
// settings from the alias marker) and when the device now belongs to
// another attachment (then it leaves the device alone and only releases
// this attachment's addresses). A device with neither a record nor a
// marker for this attachment is not locked: nothing is written.
func (p *Plugin) Del(ctx context.Context, a Args) (err error) {
	s := p.openDel(a)
	defer func() {
		if err == nil { // the device is back on the host: its binding may go
			p.releaseBinding(ctx, s, a)
			p.removeDRAStatus(s, a)
		}
	}()
	key := s.key
	if rec, err := s.store.Find(a.ContainerID, a.IfName); err == nil {
		key = rec.Key
	}
	var rec *state.Record
	held := false // the device's lock is held: a record or marker was found
	if key != "" {
		var err error
		if held, err = p.holdsAnything(ctx, s, a, key); err != nil {
			return err
		}
		if held {
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
	infoFile := s.cfg.DeviceInfoFile
	if rec != nil && rec.DeviceInfoFile != "" {
		infoFile = rec.DeviceInfoFile
	}
	if err := p.removeDeviceInfo(infoFile, attachment{ContainerID: a.ContainerID, IfName: a.IfName}); err != nil {
		return err
	}
	if !held {
		return nil
	}
	cur, err := s.store.Get(key)
	switch {
	case errors.Is(err, state.ErrCorrupt):
		return p.dropCorrupt(ctx, s, key, rec != nil)
	case err == nil && rec != nil && rec.Key == key && cur.ContainerID == a.ContainerID && cur.IfName == a.IfName:
		return s.store.Delete(key)
	}
	return nil
}

// holdsAnything reports whether DEL has anything to release on device key
// for this attachment: a record (even one that does not decode), or the
// alias marker on the pod's interface (a record lost). A DEL of a device
// with neither takes no lock and so writes nothing (a read-only or missing
// state directory cannot fail it, and no lock file is left behind).
func (p *Plugin) holdsAnything(ctx context.Context, s *session, a Args, key string) (bool, error) {
	if _, err := s.store.Get(key); !errors.Is(err, state.ErrNoRecord) {
		return true, nil
	}
	rec, err := p.recoverRecord(ctx, s, a, key)
	return rec != nil, err
}

// dropCorrupt removes device key's record that does not decode when it is
// stale: this attachment held the device (ours) and released it, or the
// device is free on the host. Otherwise it is left, with a warning, for
// the DEL of the pod holding the device.
func (p *Plugin) dropCorrupt(ctx context.Context, s *session, key string, ours bool) error {
	if !ours {
		free, err := p.freeOnHost(ctx, s, key)
		if err != nil {
			return err
		}
		if !free {
			p.warn("record that does not decode left for the pod holding the device", "device", key, "record", s.store.RecordPath(key))
			return nil
		}
	}
	p.warn("removing a record that does not decode (stale)", "device", key, "record", s.store.RecordPath(key))
	return s.store.Delete(key)
}

// freeOnHost reports whether device key is on the host and attached to
// no one: its netdev in the host namespace without railyard-cni's alias
// marker. A share's NIC never leaves the host.
func (p *Plugin) freeOnHost(ctx context.Context, s *session, key string) (bool, error) {
	if _, _, err := deviceid.ParseShare(key); err == nil {
		return true, nil
	}
	names := []string{strings.TrimPrefix(key, "netdev-")}
	if !strings.HasPrefix(key, "netdev-") {
		names, _ = s.fs.Netdevs(key)
	}
	for _, n := range names {
		l, err := p.Ops.Link(ctx, netops.Host, n)
		if errors.Is(err, netops.ErrLinkNotFound) {
			continue
		}
		if err != nil {
			return false, err
		}
		if _, marked := parseMarker(l.Alias); !marked {
			return true, nil
		}
	}
	return false, nil
}

// findAttachment returns this attachment's record of device key, rebuilt
// from the interface's alias marker when the record is gone, or nil when
// the device is not attached for this container and interface.
func (p *Plugin) findAttachment(ctx context.Context, s *session, a Args, key string) (*state.Record, error) {
	rec, err := s.store.Get(key)
	switch {
	case errors.Is(err, state.ErrNoRecord):
	case errors.Is(err, state.ErrCorrupt):
		// Stale: this attachment's part is found from the marker.
		p.warn("record that does not decode treated as stale", "device", key, "error", err)
	case err != nil:
		return nil, err
	case rec.ContainerID == a.ContainerID && rec.IfName == a.IfName:
		return rec, nil
	}
	// No record, or the device now serves another attachment.
	return p.recoverRecord(ctx, s, a, key)
}

// recoverRecord rebuilds what can be known of an attachment whose record is
// gone from the alias marker on the interface in the pod: the device key,
// the original name and (in a marker of this version) the host MTU, up
// state and Ethernet MAC, which the teardown then restores. The original
// alias, VF settings and addresses were only in the record and stay as
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
	m, ok := parseMarker(l.Alias)
	byName := s.cfg.Device != "" && m.Orig == s.cfg.Device
	if !ok || (m.Key != key && !byName) {
		return nil, nil // not an interface railyard-cni attached for this device
	}
	key = m.Key
	rec := &state.Record{
		Key: key, ContainerID: a.ContainerID, IfName: a.IfName, Netns: a.Netns,
		TempName: tempName(key, a.ContainerID, a.IfName), Marker: l.Alias,
		Orig: m.Host,
		// The rules ADD may have added look up the table of the
		// interface's index: none else has that table and priority.
		RailTable: railTable(l.Index),
	}
	if pci, _, err := deviceid.ParseShare(key); err == nil {
		rec.PCI, rec.Kind, rec.Parent = pci, state.KindMacvlan, m.Orig
		rec.Orig = netops.Link{Name: m.Orig, Index: -1}
		return rec, nil
	}
	if m.Host.MAC != nil {
		rec.OrigMAC = m.Host.MAC.String()
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
