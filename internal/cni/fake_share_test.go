package cni

import (
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/containernetworking/cni/pkg/types"

	"github.com/railyard-io/railyard/internal/cni/state"
	"github.com/railyard-io/railyard/internal/deviceid"
	"github.com/railyard-io/railyard/internal/draview"
	"github.com/railyard-io/railyard/internal/netops"
	"github.com/railyard-io/railyard/internal/netops/netopstest"
)

// shareConf is the configuration of share k of the PF ens1f0, as Multus
// passes a shared pool's device ID.
func (w *world) shareConf(k int, extra map[string]any) []byte {
	base := map[string]any{"vlan": nil, "vlanQoS": nil, "spoofchk": nil, "trust": nil, "link_state": nil,
		"min_tx_rate": nil, "max_tx_rate": nil, "rdma": nil, "mac": nil, "mtu": 1400}
	for k, v := range extra {
		base[k] = v
	}
	return w.conf(deviceid.Share(pfPCI, k), base)
}

// assertPFUntouched: the shared NIC's netdev is on the host as created.
func (w *world) assertPFUntouched() {
	w.t.Helper()
	l, ok := w.ops.LinkIn(netops.Host, "ens1f0")
	if !ok || l.Index != 3 || l.MTU != 1500 || !l.Up || l.Alias != "" {
		w.t.Errorf("shared NIC ens1f0 changed: %+v (found %v)", l, ok)
	}
}

// TestSharedNICMacvlanPerPodFake: two pods each take a share of one NIC and
// get a macvlan on it as net1; the NIC stays on the host; each DEL removes
// only its pod's macvlan.
func TestSharedNICMacvlanPerPodFake(t *testing.T) {
	w := newWorld(t)
	p := w.plugin()
	a1 := args("c1", pod1, "net1", w.shareConf(0, nil))
	a2 := args("c2", pod2, "net1", w.shareConf(1, nil))
	for k, a := range []Args{a1, a2} {
		res, err := p.Add(ctx, a)
		if err != nil {
			t.Fatal(err)
		}
		if res.Interfaces[0].PciID != pfPCI || res.Interfaces[0].Mtu != 1400 || len(res.IPs) != 1 {
			t.Errorf("result %+v", res.Interfaces[0])
		}
		l, ok := w.ops.LinkIn(a.Netns, "net1")
		if !ok || l.MTU != 1400 || !l.Up || l.Alias != marker(deviceid.Share(pfPCI, k), "ens1f0") {
			t.Errorf("net1 in %s: %+v (found %v)", a.Netns, l, ok)
		}
		must(t, p.Check(ctx, a))
	}
	w.assertPFUntouched()
	if got := w.ops.LinkNames(netops.Host); slices.ContainsFunc(got, func(n string) bool { return len(n) == 13 && n[:2] == "ry" }) {
		t.Errorf("a temporary link is left on the host: %v", got)
	}
	must(t, p.Del(ctx, a1))
	if _, ok := w.ops.LinkIn(pod1, "net1"); ok {
		t.Error("pod1's macvlan survived DEL")
	}
	if _, ok := w.ops.LinkIn(pod2, "net1"); !ok {
		t.Error("pod1's DEL removed pod2's macvlan")
	}
	must(t, p.Del(ctx, a1)) // again
	must(t, p.Del(ctx, a2))
	w.assertPFUntouched()
	if recs, _ := (state.Store{Dir: w.stateDir}).List(); len(recs) != 0 {
		t.Errorf("records left: %v", recs)
	}
	if n := w.ipam.allocated(); n != 0 {
		t.Errorf("%d addresses left", n)
	}
}

// TestSharedNICRollbackAtEveryStepFake: a failure at each mutating step of
// a share's ADD leaves no macvlan, record or address, and the NIC as it was.
func TestSharedNICRollbackAtEveryStepFake(t *testing.T) {
	w := newWorld(t)
	w.ops.FailAtMutation(0)
	if _, err := w.plugin().Add(ctx, args("c1", pod1, "net1", w.shareConf(0, nil))); err != nil {
		t.Fatal(err)
	}
	n := w.ops.Mutations()
	// macvlan, alias, move, rename, MTU, up, addresses, then multi-rail:
	// arp_ignore, arp_announce, rp_filter, the table's route, the rule.
	if n != 12 {
		t.Fatalf("a share's ADD made %d mutating calls, want 12: %v", n, w.ops.Calls())
	}
	for k := 1; k <= n; k++ {
		w := newWorld(t)
		w.ops.FailAtMutation(k)
		_, err := w.plugin().Add(ctx, args("c1", pod1, "net1", w.shareConf(0, nil)))
		if !errors.Is(err, netopstest.ErrInjected) {
			t.Fatalf("step %d: ADD error %v, want the injected failure", k, err)
		}
		w.assertPFUntouched()
		for _, ns := range []string{netops.Host, pod1} {
			for _, name := range w.ops.LinkNames(ns) {
				if l, _ := w.ops.LinkIn(ns, name); l.Alias != "" && l.Alias != origLink.Alias {
					t.Errorf("step %d: %s left in %q (alias %q)", k, name, ns, l.Alias)
				}
			}
		}
		if recs, _ := (state.Store{Dir: w.stateDir}).List(); len(recs) != 0 {
			t.Errorf("step %d: records left", k)
		}
		if rules, _ := w.ops.Rules(ctx, pod1); len(rules) != 0 {
			t.Errorf("step %d: routing rules left in the pod: %v", k, rules)
		}
		if n := w.ipam.allocated(); n != 0 {
			t.Errorf("step %d: %d addresses left", k, n)
		}
	}
}

// TestSharedNICRefusalsFake: a share refuses VF settings, rdma (its RDMA
// device serves every pod sharing it) and an MTU above the NIC's (the
// kernel refuses a macvlan larger than its parent) before changing
// anything.
func TestSharedNICRefusalsFake(t *testing.T) {
	w := newWorld(t)
	p := w.plugin()
	for name, extra := range map[string]map[string]any{
		"rdma":                   {"rdma": true},
		"vlan":                   {"vlan": 10},
		"an MTU above the NIC's": {"mtu": 9000},
	} {
		if _, err := p.Add(ctx, args("c1", pod1, "net1", w.shareConf(0, extra))); err == nil {
			t.Errorf("%s on a share accepted", name)
		}
	}
	w.assertPFUntouched()
	if got := w.ops.LinkNames(pod1); len(got) != 0 {
		t.Errorf("pod1 has %v", got)
	}
}

// TestDRASharesOfOneNICMacvlanPerPodFake: two claims hold shares 0 and 1
// of NIC ens1f0 (a DRA shared pool, KEP-5075), one reserved for each of
// two pods; a network naming the pool by resourceName gives each pod a
// macvlan on the NIC, keyed and marked by its share ID as the device
// plugin's shares are, with a status record per claim; the NIC stays on
// the host untouched; each DEL removes its pod's macvlan only. A
// network that would move the shared RDMA device (rdma) is refused.
func TestDRASharesOfOneNICMacvlanPerPodFake(t *testing.T) {
	w := newWorld(t)
	dir := filepath.Join(t.TempDir(), "binding")
	share := func(k int) []draview.Device {
		return []draview.Device{{PCI: pfPCI, Resource: draRes, RDMA: "mlx5_0", PF: pfPCI, Rail: 0, Share: &k}}
	}
	must(t, draview.Write(dir, draview.View{Pools: []string{draRes}, Claims: []draview.Claim{
		{Namespace: "ml", Name: "trainer-nic", UID: "c1", Pods: []draview.Pod{{Name: "trainer", UID: "u1"}}, Devices: share(0)},
		{Namespace: "ml", Name: "other-nic", UID: "c2", Pods: []draview.Pod{{Name: "other", UID: "u2"}}, Devices: share(1)},
	}}))
	conf := func(extra map[string]any) []byte {
		base := map[string]any{"deviceID": nil, "resourceName": draRes, "bindingDir": dir, "vlan": nil, "vlanQoS": nil, "spoofchk": nil,
			"trust": nil, "link_state": nil, "min_tx_rate": nil, "max_tx_rate": nil, "rdma": nil, "mac": nil, "mtu": 1400}
		for k, v := range extra {
			base[k] = v
		}
		return w.conf("", base)
	}
	p := w.plugin()
	a1 := args("sb1", pod1, "net1", conf(nil))
	a1.PluginArgs = "K8S_POD_NAMESPACE=ml;K8S_POD_NAME=trainer;K8S_POD_UID=u1"
	a2 := args("sb2", pod2, "net1", conf(nil))
	a2.PluginArgs = "K8S_POD_NAMESPACE=ml;K8S_POD_NAME=other;K8S_POD_UID=u2"
	for k, a := range []Args{a1, a2} {
		res, err := p.Add(ctx, a)
		if err != nil {
			t.Fatalf("ADD for share %d: %v", k, err)
		}
		if res.Interfaces[0].PciID != pfPCI || res.Interfaces[0].Mtu != 1400 {
			t.Errorf("share %d: result %+v", k, res.Interfaces[0])
		}
		l, ok := w.ops.LinkIn(a.Netns, "net1")
		if !ok || l.Alias != marker(deviceid.Share(pfPCI, k), "ens1f0") {
			t.Errorf("share %d: net1 in %s: %+v (found %v), want a macvlan marked for %s", k, a.Netns, l, ok, deviceid.Share(pfPCI, k))
		}
		must(t, p.Check(ctx, a))
	}
	w.assertPFUntouched()
	st, err := draview.ReadStatuses(dir)
	must(t, err)
	if len(st) != 2 || st[0].PCI != pfPCI || st[1].PCI != pfPCI || st[0].ClaimUID == st[1].ClaimUID {
		t.Errorf("status records %+v, want one per claim on %s", st, pfPCI)
	}
	must(t, p.Del(ctx, a1))
	if _, ok := w.ops.LinkIn(pod1, "net1"); ok {
		t.Error("pod1's macvlan left after its DEL")
	}
	if _, ok := w.ops.LinkIn(pod2, "net1"); !ok {
		t.Error("pod2's macvlan went with pod1's DEL")
	}
	must(t, p.Del(ctx, a2))
	w.assertPFUntouched()

	bad := args("sb3", pod1, "net1", conf(map[string]any{"rdma": true}))
	bad.PluginArgs = a1.PluginArgs
	if _, err := p.Add(ctx, bad); Code(err) != types.ErrInvalidNetworkConfig || !strings.Contains(err.Error(), "share of a shared NIC") {
		t.Errorf("rdma on a share: code %d, %v", Code(err), err)
	}
	if got := w.ops.LinkNames(pod1); len(got) != 0 {
		t.Errorf("pod1 has %v after a refused ADD", got)
	}
}
