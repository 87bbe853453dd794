package cni

import (
	"net"
	"testing"

	"github.com/railyard-io/railyard/internal/cni/multustest"
	"github.com/railyard-io/railyard/internal/netops"
)

func multusDelegate(t *testing.T, conf []byte, device string) []byte {
	t.Helper()
	b, err := multustest.Delegate(conf, device)
	must(t, err)
	return b
}

// TestMultusDelegateAddDelFakeVF: the configuration Multus sends (with
// pciBusID) attaches and releases the device.
func TestMultusDelegateAddDelFakeVF(t *testing.T) {
	checkMultusDelegateAddDel(newWorld(t))
}

// TestDelReleasesOnConfigsAddRejectsFakeVF: DEL parses only what it needs,
// so a configuration ADD would refuse (a field this version does not know,
// values out of range, a document that is not JSON) still releases the
// device, its addresses and its record. This is what kept pods Terminating
// for good when Multus's pciBusID was unknown.
func TestDelReleasesOnConfigsAddRejectsFakeVF(t *testing.T) {
	checkDelReleasesOnConfigsAddRejects(t, func(t *testing.T) vfEnv { return newWorld(t) })
}

// TestVLANProtoSetAndRestoredFakeVF: sriov-cni's vlanProto 802.1ad is set
// through the PF and DEL puts back 802.1Q.
func TestVLANProtoSetAndRestoredFakeVF(t *testing.T) {
	w := newWorld(t)
	p := w.plugin()
	a := args("c1", pod1, "net1", w.conf(vfPCI, map[string]any{"vlan": 200, "vlanQoS": nil, "vlanProto": "802.1ad"}))
	if _, err := p.Add(ctx, a); err != nil {
		t.Fatal(err)
	}
	if got := w.ops.VFSettingsOf("ens1f0", 2); got.VLAN != 200 || got.VLANProto != netops.VLANProto8021AD {
		t.Errorf("VF after ADD %+v, want vlan 200 proto 0x88a8", got)
	}
	must(t, p.Del(ctx, a))
	w.assertPristine()
}

// TestInfiniBandGUIDSetAndRestoredFakeVF: ib-sriov-cni's GUID (from
// runtimeConfig.infinibandGUID) is set through the PF as node and port
// GUID; DEL sets back the GUID the IPoIB netdev had.
func TestInfiniBandGUIDSetAndRestoredFakeVF(t *testing.T) {
	w := newWorld(t)
	// An IPoIB VF (replacing the Ethernet one): its 20-byte address ends
	// with its GUID.
	ipoib, _ := net.ParseMAC("00:00:10:49:fe:80:00:00:00:00:00:00:0a:0b:0c:0d:0e:0f:10:11")
	w.ops.AddLink(netops.Host, netops.Link{Name: "ens1f0v3", Index: 6, MTU: 2044, MAC: ipoib}, false)
	p := w.plugin()
	conf := w.conf(vf2PCI, map[string]any{"mac": nil, "vlan": nil, "vlanQoS": nil, "spoofchk": nil, "trust": nil,
		"min_tx_rate": nil, "max_tx_rate": nil, "rdma": false,
		"capabilities":  map[string]bool{"infinibandGUID": true},
		"runtimeConfig": map[string]any{"infinibandGUID": "02:00:00:00:00:00:00:11"},
		"pkey":          "0x7fff", "ibKubernetesEnabled": true,
		"args": map[string]any{"cni": map[string]any{"mellanox.infiniband.app": "configured"}}})
	a := args("c1", pod1, "net1", conf)
	if _, err := p.Add(ctx, a); err != nil {
		t.Fatal(err)
	}
	if got := w.ops.VFGUIDOf("ens1f0", 3); got != "02:00:00:00:00:00:00:11" {
		t.Errorf("VF GUID after ADD = %q", got)
	}
	must(t, p.Del(ctx, a))
	if got := w.ops.VFGUIDOf("ens1f0", 3); got != "0a:0b:0c:0d:0e:0f:10:11" {
		t.Errorf("VF GUID after DEL = %q, want the original 0a:0b:0c:0d:0e:0f:10:11", got)
	}
}

// TestInfiniBandRulesFakeVF: a GUID on an Ethernet VF is refused before
// anything changes; with ibKubernetesEnabled, ADD waits (code 11) until
// ib-kubernetes marks the pod configured, and a VF needs a GUID.
func TestInfiniBandRulesFakeVF(t *testing.T) {
	checkInfiniBandRules(newWorld(t))
}

// TestInfiniBandGUIDRefusedByTheDriverFakeVF: the fake's IPoIB VF behind a
// driver that answers GUIDs as igb does (TestInfiniBandGUIDRefusedByIGBRealVF
// is the kernel's answer): the rollback does not keep the record.
func TestInfiniBandGUIDRefusedByTheDriverFakeVF(t *testing.T) {
	w := newWorld(t)
	checkGUIDRefusedByTheDriver(w, ipoibView{Ops: refusesGUIDs{w.ops}, dev: origLink.Name})
}
