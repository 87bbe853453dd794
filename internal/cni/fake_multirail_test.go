package cni

import (
	"net"
	"slices"
	"strings"
	"testing"

	"github.com/containernetworking/cni/pkg/types"
	current "github.com/containernetworking/cni/pkg/types/100"
	"github.com/google/go-cmp/cmp"

	"github.com/railyard-io/railyard/internal/cni/state"
	"github.com/railyard-io/railyard/internal/netops"
)

func hostNet(t *testing.T, s string) *net.IPNet {
	t.Helper()
	ip, n, err := net.ParseCIDR(s)
	if err != nil {
		t.Fatal(err)
	}
	n.IP = ip
	return n
}

// twoRails attaches both VFs of the fake node to pod1, as net1 (VF 0,
// ifindex 5, 192.168.50.10) and net2 (VF 1, ifindex 6, 192.168.50.11):
// two rails in one subnet.
func twoRails(t *testing.T, w *world, extra map[string]any) (a1, a2 Args) {
	t.Helper()
	a1 = args("c1", pod1, "net1", w.conf(vfPCI, extra))
	a2 = args("c1", pod1, "net2", w.conf(vf2PCI, with(extra, "mac", "02:bb:00:00:00:02")))
	for _, a := range []Args{a1, a2} {
		if _, err := w.plugin().Add(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	return a1, a2
}

// TestMultiRailARPAndSourceRoutingFakeVF: each rail of a pod answers ARP
// only for its own address (arp_ignore 1, arp_announce 2, loose rp_filter)
// and has a routing table of its own (10000 + its ifindex) with its
// subnet, and a rule sends what leaves from its address there; CHECK
// finds a rule removed behind the plugin's back; each DEL removes its
// own rule only.
func TestMultiRailARPAndSourceRoutingFakeVF(t *testing.T) {
	w := newWorld(t)
	a1, a2 := twoRails(t, w, nil)
	subnet := hostNet(t, "192.168.50.0/24")
	subnet.IP = subnet.IP.Mask(subnet.Mask)
	for _, r := range []struct {
		ifname string
		table  int
	}{{"net1", 10005}, {"net2", 10006}} {
		for knob, want := range map[string]string{"arp_ignore": "1", "arp_announce": "2", "rp_filter": "2"} {
			if v, err := w.ops.Sysctl(ctx, pod1, netops.IfaceSysctl("ipv4", r.ifname, knob)); err != nil || v != want {
				t.Errorf("%s %s = %q, %v; want %s", r.ifname, knob, v, err, want)
			}
		}
		routes, err := w.ops.Routes(ctx, pod1, r.table)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]netops.Route{{Table: r.table, Dst: subnet, Link: r.ifname}}, routes); diff != "" {
			t.Errorf("table %d (-want +got):\n%s", r.table, diff)
		}
	}
	r1 := netops.Rule{Priority: railRulePriority, Src: hostNet(t, "192.168.50.10/32"), Table: 10005}
	r2 := netops.Rule{Priority: railRulePriority, Src: hostNet(t, "192.168.50.11/32"), Table: 10006}
	rules := func() []netops.Rule {
		t.Helper()
		rs, err := w.ops.Rules(ctx, pod1)
		if err != nil {
			t.Fatal(err)
		}
		return rs
	}
	if diff := cmp.Diff([]netops.Rule{r1, r2}, rules()); diff != "" {
		t.Errorf("rules (-want +got):\n%s", diff)
	}
	for _, a := range []Args{a1, a2} {
		must(t, w.plugin().Check(ctx, a))
	}
	must(t, w.ops.DelRule(ctx, pod1, r1))
	if err := w.plugin().Check(ctx, a1); err == nil || !strings.Contains(err.Error(), "routing rule") {
		t.Errorf("CHECK without net1's rule: %v", err)
	}
	must(t, w.ops.AddRule(ctx, pod1, r1))
	must(t, w.plugin().Del(ctx, a1))
	if diff := cmp.Diff([]netops.Rule{r2}, rules()); diff != "" {
		t.Errorf("rules after net1's DEL (-want +got):\n%s", diff)
	}
	must(t, w.plugin().Del(ctx, a2))
	w.assertPristine()
}

// TestMultiRailOffSetsNothingFakeVF: multiRail false sets no sysctl, route
// or rule, and records no table.
func TestMultiRailOffSetsNothingFakeVF(t *testing.T) {
	w := newWorld(t)
	a1, a2 := twoRails(t, w, map[string]any{"multiRail": false})
	for _, c := range w.ops.Calls() {
		if strings.HasPrefix(c, "SetSysctl") || strings.HasPrefix(c, "AddRoute") || strings.HasPrefix(c, "AddRule") {
			t.Errorf("multiRail false made %s", c)
		}
	}
	if rec, err := (state.Store{Dir: w.stateDir}).Get(vfPCI); err != nil || rec.RailTable != 0 {
		t.Errorf("record's table %v, %v; want none", rec, err)
	}
	for _, a := range []Args{a1, a2} {
		must(t, w.plugin().Check(ctx, a))
		must(t, w.plugin().Del(ctx, a))
	}
	w.assertPristine()
}

// TestDelRemovesRailRulesWithTheRecordLostFakeVF: with the records gone,
// DEL finds the interface by its marker and its rules by the table of
// its index.
func TestDelRemovesRailRulesWithTheRecordLostFakeVF(t *testing.T) {
	w := newWorld(t)
	a1, a2 := twoRails(t, w, nil)
	for _, key := range []string{vfPCI, vf2PCI} {
		must(t, (state.Store{Dir: w.stateDir}).Delete(key))
	}
	must(t, w.plugin().Del(ctx, a1))
	rs, err := w.ops.Rules(ctx, pod1)
	if err != nil || len(rs) != 1 || rs[0].Table != 10006 {
		t.Errorf("rules after net1's DEL without its record: %v, %v; want net2's only", rs, err)
	}
	must(t, w.plugin().Del(ctx, a2))
	if rs, _ := w.ops.Rules(ctx, pod1); len(rs) != 0 {
		t.Errorf("rules left: %v", rs)
	}
	if slices.ContainsFunc(w.ops.LinkNames(pod1), func(n string) bool { return n == "net1" || n == "net2" }) {
		t.Errorf("pod1 still has %v", w.ops.LinkNames(pod1))
	}
}

// TestRailRoutes: an interface's table holds each address's subnet, the
// result's routes (through the gateway of their family when they name
// none; a default one without any gateway left out) and, with a gateway
// and no default route in the result, a default route through it; the
// rules send each address (a host prefix) to the table.
func TestRailRoutes(t *testing.T) {
	t.Parallel()
	ip := func(s string) net.IP { return net.ParseIP(s) }
	res := &current.Result{
		IPs: []*current.IPConfig{
			{Address: *hostNet(t, "10.56.1.7/24"), Gateway: ip("10.56.1.1")},
			{Address: *hostNet(t, "fd00:56::7/64")},
		},
		Routes: []*types.Route{
			{Dst: *mustNet(t, "10.56.0.0/16")},
			{Dst: *mustNet(t, "::/0")},
			{Dst: *mustNet(t, "fd00:99::/64"), GW: ip("fd00:56::1")},
		},
	}
	want := []netops.Route{
		{Table: 10007, Dst: mustNet(t, "10.56.1.0/24"), Link: "net1"},
		{Table: 10007, Dst: mustNet(t, "fd00:56::/64"), Link: "net1"},
		{Table: 10007, Dst: mustNet(t, "10.56.0.0/16"), GW: ip("10.56.1.1"), Link: "net1"},
		{Table: 10007, Dst: mustNet(t, "fd00:99::/64"), GW: ip("fd00:56::1"), Link: "net1"},
		{Table: 10007, GW: ip("10.56.1.1"), Link: "net1"},
	}
	if diff := cmp.Diff(want, railRoutes(res, "net1", 10007)); diff != "" {
		t.Errorf("railRoutes (-want +got):\n%s", diff)
	}
	// A default route in the result takes the place of the gateway's.
	res.Routes = []*types.Route{{Dst: *mustNet(t, "0.0.0.0/0"), GW: ip("10.56.1.254")}}
	got := railRoutes(res, "net1", 10007)
	if n := len(got); n != 3 || !got[2].GW.Equal(ip("10.56.1.254")) || got[2].Dst != nil {
		t.Errorf("railRoutes with the result's default route: %v", got)
	}
	wantRules := []netops.Rule{
		{Priority: railRulePriority, Src: hostNet(t, "10.56.1.7/32"), Table: 10007},
		{Priority: railRulePriority, Src: hostNet(t, "fd00:56::7/128"), Table: 10007},
	}
	if diff := cmp.Diff(wantRules, railRules(res, 10007)); diff != "" {
		t.Errorf("railRules (-want +got):\n%s", diff)
	}
}

func mustNet(t *testing.T, s string) *net.IPNet {
	t.Helper()
	_, n, err := net.ParseCIDR(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
