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
	valid := map[[2]string]bool{}
	for _, v := range s.cfg.ValidAttachments {
		valid[[2]string{v.ContainerID, v.IfName}] = true
	}
	recs, listErr := s.store.List()
	var errs []error
	if listErr != nil {
		errs = append(errs, listErr)
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
