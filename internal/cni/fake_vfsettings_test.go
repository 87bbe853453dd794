package cni

import (
	"context"
	"strings"
	"testing"

	"github.com/railyard-io/railyard/internal/netops"
)

// TestEveryVFSettingAppliesChecksAndRestoresFakeVF: each VF setting of the
// table, asked alone, is applied through the PF, its drift found by CHECK
// and the original restored by DEL.
func TestEveryVFSettingAppliesChecksAndRestoresFakeVF(t *testing.T) {
	t.Parallel()
	none := map[string]any{"vlan": nil, "vlanQoS": nil, "spoofchk": nil, "trust": nil, "link_state": nil,
		"min_tx_rate": nil, "max_tx_rate": nil}
	for _, tc := range []struct {
		key   string
		value any
		with  map[string]any           // what the setting needs beside it
		drift func(o netops.Ops) error // changes the setting behind the plugin's back
		msg   string                   // what CHECK then says
	}{
		{"vlan", 100, nil, func(o netops.Ops) error { return o.SetVFVLAN(context.Background(), "ens1f0", 2, 7, 0, 0) }, "vlan/qos 7/0, want 100/0"},
		{"vlanQoS", 3, map[string]any{"vlan": 100}, func(o netops.Ops) error { return o.SetVFVLAN(context.Background(), "ens1f0", 2, 100, 5, 0) }, "vlan/qos 100/5, want 100/3"},
		{"vlanProto", "802.1ad", map[string]any{"vlan": 100}, func(o netops.Ops) error {
			return o.SetVFVLAN(context.Background(), "ens1f0", 2, 100, 0, netops.VLANProto8021Q)
		}, "vlan protocol"},
		{"spoofchk", "off", nil, func(o netops.Ops) error { return o.SetVFSpoofChk(context.Background(), "ens1f0", 2, true) }, "spoofchk true, want false"},
		{"trust", "on", nil, func(o netops.Ops) error { return o.SetVFTrust(context.Background(), "ens1f0", 2, false) }, "trust false, want true"},
		{"link_state", "disable", nil, func(o netops.Ops) error {
			return o.SetVFLinkState(context.Background(), "ens1f0", 2, netops.VFLinkStateAuto)
		}, "link_state"},
		{"min_tx_rate", 100, nil, func(o netops.Ops) error { return o.SetVFRate(context.Background(), "ens1f0", 2, 0, 0) }, "min_tx_rate 0, want 100"},
		{"max_tx_rate", 2000, nil, func(o netops.Ops) error { return o.SetVFRate(context.Background(), "ens1f0", 2, 0, 0) }, "max_tx_rate 0, want 2000"},
	} {
		t.Run(tc.key, func(t *testing.T) {
			w := newWorld(t)
			extra := map[string]any{}
			for k, v := range none {
				extra[k] = v
			}
			extra[tc.key] = tc.value
			for k, v := range tc.with {
				extra[k] = v
			}
			a := args("c1", pod1, "net1", w.conf(vfPCI, extra))
			if _, err := w.plugin().Add(ctx, a); err != nil {
				t.Fatal(err)
			}
			if w.ops.VFSettingsOf("ens1f0", 2) == origVF {
				t.Fatalf("%s not applied: VF %+v", tc.key, origVF)
			}
			must(t, w.plugin().Check(ctx, a))
			must(t, tc.drift(w.ops))
			if err := w.plugin().Check(ctx, a); err == nil || !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("CHECK after a change behind its back: %v, want %q", err, tc.msg)
			}
			must(t, w.plugin().Del(ctx, a))
			w.assertPristine()
		})
	}
}
