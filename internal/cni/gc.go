package cni

import (
	"context"
	"errors"
	"fmt"

	"github.com/railyard-io/railyard/internal/cni/state"
)

// GC releases every attachment of this network that is not in
// cni.dev/valid-attachments: its device goes back to the host with its
// original settings, its addresses and device-info file are released and
// its record removed. Then the IPAM plugin's own GC runs.
func (p *Plugin) GC(ctx context.Context, a Args) error {
	s, err := p.openNetwork(a)
	if err != nil {
		return err
	}
	if s.cfg.ValidAttachments == nil {
		// Absent is not "nothing is valid": that would tear down every
		// attachment of the network.
		return invalidf("cni.dev/valid-attachments: missing; GC needs the attachments to keep (an empty list [] releases every attachment of network %s)", s.cfg.Name)
	}
	valid := map[[2]string]bool{}
	for _, v := range s.cfg.ValidAttachments {
		valid[[2]string{v.ContainerID, v.IfName}] = true
	}
	recs, corrupt, listErr := s.store.ListAll()
	var errs []error
	if listErr != nil {
		errs = append(errs, listErr)
	}
	for _, key := range corrupt {
		if err := p.collectCorrupt(ctx, s, key); err != nil {
			errs = append(errs, err)
		}
	}
	for _, rec := range recs {
		if rec.Network != s.cfg.Name || valid[[2]string{rec.ContainerID, rec.IfName}] {
			continue
		}
		if err := p.collect(ctx, s, rec); err != nil {
			errs = append(errs, err)
		}
	}
	if s.cfg.IPAMType != "" {
		if _, err := p.IPAM.Exec(ctx, "GC", s.cfg.IPAMType, s.cfg.Raw, a); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// collectCorrupt handles a record that does not decode, of whatever
// network: removed when the device is free on the host, else left (with a
// warning) for the DEL of the pod holding the device. It never fails GC.
func (p *Plugin) collectCorrupt(ctx context.Context, s *session, key string) error {
	unlock, err := s.lock(ctx, key)
	if err != nil {
		return err
	}
	defer unlock()
	if _, err := s.store.Get(key); !errors.Is(err, state.ErrCorrupt) {
		return nil // rewritten or removed since the list
	}
	return p.dropCorrupt(ctx, s, key, false)
}

// collect releases one stale attachment under its device lock.
func (p *Plugin) collect(ctx context.Context, s *session, stale *state.Record) error {
	unlock, err := s.lock(ctx, stale.Key)
	if err != nil {
		return err
	}
	defer unlock()
	rec, err := s.store.Get(stale.Key)
	if errors.Is(err, state.ErrNoRecord) {
		return nil
	}
	if err != nil {
		return err
	}
	if rec.ContainerID != stale.ContainerID || rec.IfName != stale.IfName {
		return nil // re-attached since we listed it
	}
	if err := p.teardown(ctx, s.fs, rec); err != nil {
		return fmt.Errorf("GC of %s (container %s): %w", rec.Key, rec.ContainerID, err)
	}
	if err := p.releaseIPAM(ctx, rec); err != nil {
		return fmt.Errorf("GC of %s: %w", rec.Key, err)
	}
	if err := p.removeDeviceInfo(rec.DeviceInfoFile, recAttachment(rec)); err != nil {
		return err
	}
	return s.store.Delete(rec.Key)
}
