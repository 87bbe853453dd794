package cni

import (
	"context"
	"errors"
	"fmt"
	"net"

	"github.com/railyard-io/railyard/internal/cni/config"
	"github.com/railyard-io/railyard/internal/cni/state"
	"github.com/railyard-io/railyard/internal/netops"
)

// vfRef names a VF through its PF, with the operations that reach it.
type vfRef struct {
	o  netops.Ops
	pf string
	vf int
}

// vfDrift is a setting found other than the configuration asks.
type vfDrift struct {
	what       string
	have, want any
}

// vfSetting is one setting of a VF made through its PF, knowing how ADD
// applies what the configuration asks (orig: the VF before ADD), how CHECK
// finds drift from it (cur: the VF now; nil: none) and how DEL restores
// what the record holds (cur: the VF now). A nil function does nothing:
// a VF's MAC is no configuration setting (the pod sets it on the netdev)
// but is restored; the kernel does not report a GUID, so it is not checked.
type vfSetting struct {
	apply   func(ctx context.Context, r vfRef, want config.VF, orig netops.VFSettings) error
	check   func(want config.VF, orig, cur netops.VFSettings) *vfDrift
	restore func(ctx context.Context, r vfRef, rec *state.Record, cur netops.VFSettings) error
}

// vfSettings is every VF setting, in the order ADD applies them and DEL
// restores them.
var vfSettings = [...]vfSetting{
	{apply: applyVLAN, check: checkVLAN, restore: restoreVLAN},
	{apply: applyGUID, restore: restoreGUID},
	{restore: restoreVFMAC},
	onOff("spoofchk", func(v config.VF) config.Tri { return v.SpoofChk }, func(v netops.VFSettings) bool { return v.SpoofChk },
		func(o netops.Ops) func(context.Context, string, int, bool) error { return o.SetVFSpoofChk }),
	onOff("trust", func(v config.VF) config.Tri { return v.Trust }, func(v netops.VFSettings) bool { return v.Trust },
		func(o netops.Ops) func(context.Context, string, int, bool) error { return o.SetVFTrust }),
	{
		apply: func(ctx context.Context, r vfRef, want config.VF, orig netops.VFSettings) error {
			if want.LinkState == nil || *want.LinkState == orig.LinkState {
				return nil
			}
			return r.o.SetVFLinkState(ctx, r.pf, r.vf, *want.LinkState)
		},
		check: func(want config.VF, _, cur netops.VFSettings) *vfDrift {
			if want.LinkState != nil && cur.LinkState != *want.LinkState {
				return &vfDrift{"link_state", cur.LinkState, *want.LinkState}
			}
			return nil
		},
		restore: func(ctx context.Context, r vfRef, rec *state.Record, cur netops.VFSettings) error {
			if cur.LinkState == rec.OrigVF.LinkState {
				return nil
			}
			return r.o.SetVFLinkState(ctx, r.pf, r.vf, rec.OrigVF.LinkState)
		},
	},
	{apply: applyRate, check: checkRate, restore: restoreRate},
}

// applyVF makes the requested VF settings through the PF.
func (p *Plugin) applyVF(ctx context.Context, want config.VF, rec *state.Record) error {
	if rec.PF == nil || !want.Any() {
		return nil
	}
	r := vfRef{o: p.Ops, pf: rec.PF.Netdev, vf: rec.PF.VF}
	for _, s := range vfSettings {
		if s.apply == nil {
			continue
		}
		if err := s.apply(ctx, r, want, *rec.OrigVF); err != nil {
			return err
		}
	}
	return nil
}

// checkVF verifies, through the PF, the VF settings the configuration asks
// for (a VF changed behind the plugin's back is drift: `ip link set PF vf
// N vlan ...`).
func (p *Plugin) checkVF(ctx context.Context, want config.VF, rec *state.Record) error {
	if rec.PF == nil || rec.OrigVF == nil || !want.Any() {
		return nil
	}
	cur, err := p.Ops.VF(ctx, rec.PF.Netdev, rec.PF.VF)
	if err != nil {
		return fmt.Errorf("reading VF %d through PF %s: %w", rec.PF.VF, rec.PF.Netdev, err)
	}
	for _, s := range vfSettings {
		if s.check == nil {
			continue
		}
		if d := s.check(want, *rec.OrigVF, cur); d != nil {
			return fmt.Errorf("VF %d of %s (device %s) has %s %v, want %v", rec.PF.VF, rec.PF.Netdev, rec.Key, d.what, d.have, d.want)
		}
	}
	return nil
}

// restoreVF puts the VF's settings back through the PF.
func (p *Plugin) restoreVF(ctx context.Context, rec *state.Record) error {
	if rec.PF == nil || rec.OrigVF == nil {
		return nil
	}
	r := vfRef{o: p.Ops, pf: rec.PF.Netdev, vf: rec.PF.VF}
	cur, err := r.o.VF(ctx, r.pf, r.vf)
	if err != nil {
		return fmt.Errorf("reading VF %d through PF %s: %w", r.vf, r.pf, err)
	}
	for _, s := range vfSettings {
		if s.restore == nil {
			continue
		}
		if err := s.restore(ctx, r, rec, cur); err != nil {
			return err
		}
	}
	return nil
}

// applyVLAN sets VLAN, QoS and protocol together (one netlink attribute);
// an unset one keeps its value, but the protocol defaults to 802.1Q, as
// sriov-cni defaults it, and a new VLAN resets the QoS.
func applyVLAN(ctx context.Context, r vfRef, want config.VF, orig netops.VFSettings) error {
	if want.VLAN == nil && want.VLANQoS == nil && want.VLANProto == nil {
		return nil
	}
	vlan, qos, proto := orig.VLAN, orig.QoS, 0 // 0: 802.1Q
	if want.VLAN != nil {
		vlan, qos = *want.VLAN, 0
	}
	if want.VLANQoS != nil {
		qos = *want.VLANQoS
	}
	if want.VLANProto != nil {
		proto = *want.VLANProto
	}
	if vlan == orig.VLAN && qos == orig.QoS && netops.SameVLANProto(proto, orig.VLANProto) {
		return nil
	}
	return r.o.SetVFVLAN(ctx, r.pf, r.vf, vlan, qos, proto)
}

func checkVLAN(want config.VF, orig, cur netops.VFSettings) *vfDrift {
	if want.VLAN != nil || want.VLANQoS != nil {
		vlan, qos := orig.VLAN, orig.QoS
		if want.VLAN != nil {
			vlan, qos = *want.VLAN, 0
		}
		if want.VLANQoS != nil {
			qos = *want.VLANQoS
		}
		if cur.VLAN != vlan || cur.QoS != qos {
			return &vfDrift{"vlan/qos", fmt.Sprintf("%d/%d", cur.VLAN, cur.QoS), fmt.Sprintf("%d/%d", vlan, qos)}
		}
	}
	if want.VLANProto != nil && !netops.SameVLANProto(cur.VLANProto, *want.VLANProto) {
		return &vfDrift{"vlan protocol", fmt.Sprintf("%#x", cur.VLANProto), fmt.Sprintf("%#x", *want.VLANProto)}
	}
	return nil
}

func restoreVLAN(ctx context.Context, r vfRef, rec *state.Record, cur netops.VFSettings) error {
	want := *rec.OrigVF
	if cur.VLAN == want.VLAN && cur.QoS == want.QoS && netops.SameVLANProto(cur.VLANProto, want.VLANProto) {
		return nil
	}
	proto := want.VLANProto
	if netops.SameVLANProto(proto, 0) {
		proto = 0 // 802.1Q through the attribute every driver accepts
	}
	return r.o.SetVFVLAN(ctx, r.pf, r.vf, want.VLAN, want.QoS, proto)
}

func applyGUID(ctx context.Context, r vfRef, want config.VF, _ netops.VFSettings) error {
	if want.GUID == nil {
		return nil
	}
	return r.o.SetVFGUID(ctx, r.pf, r.vf, want.GUID)
}

// restoreGUID sets the recorded GUID again: the kernel does not report a
// VF's GUID through the PF (setting it again is harmless).
func restoreGUID(ctx context.Context, r vfRef, rec *state.Record, _ netops.VFSettings) error {
	if rec.OrigGUID == "" {
		return nil
	}
	g, err := net.ParseMAC(rec.OrigGUID)
	if err != nil {
		return fmt.Errorf("record of %s: original GUID %q: %w", rec.Key, rec.OrigGUID, err)
	}
	// A driver without VF GUIDs (igb: "operation not supported") took
	// none on ADD either: nothing to restore, and refusing would keep
	// the record for good.
	if err := r.o.SetVFGUID(ctx, r.pf, r.vf, g); err != nil && !errors.Is(err, errors.ErrUnsupported) {
		return err
	}
	return nil
}

// restoreVFMAC puts the VF's MAC as the PF reports it back to what it was
// before ADD. The pod's MAC, set on the VF netdev, is what the PF reports
// from then on (and hands the VF again at its next reset) unless the VF
// tells the PF its own MAC again (igb does when its netdev comes back up,
// not when it stays down); all zeros, the usual value, is set as such: the
// kernel takes it as "no administrative MAC" (igb, mlx5).
func restoreVFMAC(ctx context.Context, r vfRef, rec *state.Record, _ netops.VFSettings) error {
	if rec.OrigVFMAC == "" {
		return nil
	}
	want, err := net.ParseMAC(rec.OrigVFMAC)
	if err != nil {
		return fmt.Errorf("record of %s: original VF MAC %q: %w", rec.Key, rec.OrigVFMAC, err)
	}
	cur, err := r.o.VFAddresses(ctx, r.pf, r.vf)
	if err != nil {
		return fmt.Errorf("reading VF %d addresses through PF %s: %w", r.vf, r.pf, err)
	}
	if cur.MAC.String() == want.String() {
		return nil
	}
	if isZeroMAC(want) && cur.MAC.String() == rec.OrigMAC {
		// No administrative MAC before ADD, and the VF has told the PF its
		// own MAC again (its netdev is back up with it): that is not the
		// pod's, and clearing it would drop the VF's unicast filter until
		// the VF tells it again.
		return nil
	}
	return r.o.SetVFMAC(ctx, r.pf, r.vf, want)
}

func isZeroMAC(m net.HardwareAddr) bool {
	for _, b := range m {
		if b != 0 {
			return false
		}
	}
	return true
}

// applyRate sets the minimum and maximum rates together (one attribute);
// an unset one keeps its value.
func applyRate(ctx context.Context, r vfRef, want config.VF, orig netops.VFSettings) error {
	if want.MinTxRate == nil && want.MaxTxRate == nil {
		return nil
	}
	lo, hi := orig.MinTxRate, orig.MaxTxRate
	if want.MinTxRate != nil {
		lo = *want.MinTxRate
	}
	if want.MaxTxRate != nil {
		hi = *want.MaxTxRate
	}
	if lo == orig.MinTxRate && hi == orig.MaxTxRate {
		return nil
	}
	return r.o.SetVFRate(ctx, r.pf, r.vf, lo, hi)
}

func checkRate(want config.VF, _, cur netops.VFSettings) *vfDrift {
	if want.MinTxRate != nil && cur.MinTxRate != *want.MinTxRate {
		return &vfDrift{"min_tx_rate", cur.MinTxRate, *want.MinTxRate}
	}
	if want.MaxTxRate != nil && cur.MaxTxRate != *want.MaxTxRate {
		return &vfDrift{"max_tx_rate", cur.MaxTxRate, *want.MaxTxRate}
	}
	return nil
}

func restoreRate(ctx context.Context, r vfRef, rec *state.Record, cur netops.VFSettings) error {
	want := *rec.OrigVF
	if cur.MinTxRate == want.MinTxRate && cur.MaxTxRate == want.MaxTxRate {
		return nil
	}
	return r.o.SetVFRate(ctx, r.pf, r.vf, want.MinTxRate, want.MaxTxRate)
}

// onOff is the row of an on/off VF setting: the configuration's value
// (want), the VF's (have) and the PF operation that sets it (set). ADD
// sets it when asked and different, CHECK reports it when asked and
// different, DEL puts the record's original back when different.
func onOff(name string, want func(config.VF) config.Tri, have func(netops.VFSettings) bool,
	set func(netops.Ops) func(ctx context.Context, pf string, vf int, on bool) error) vfSetting {
	return vfSetting{
		apply: func(ctx context.Context, r vfRef, w config.VF, orig netops.VFSettings) error {
			if want(w) == config.Unset || (want(w) == config.On) == have(orig) {
				return nil
			}
			return set(r.o)(ctx, r.pf, r.vf, want(w) == config.On)
		},
		check: func(w config.VF, _, cur netops.VFSettings) *vfDrift {
			if want(w) != config.Unset && have(cur) != (want(w) == config.On) {
				return &vfDrift{name, have(cur), want(w) == config.On}
			}
			return nil
		},
		restore: func(ctx context.Context, r vfRef, rec *state.Record, cur netops.VFSettings) error {
			if have(cur) == have(*rec.OrigVF) {
				return nil
			}
			return set(r.o)(ctx, r.pf, r.vf, have(*rec.OrigVF))
		},
	}
}
