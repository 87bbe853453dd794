package cni

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"syscall"

	current "github.com/containernetworking/cni/pkg/types/100"

	"github.com/railyard-io/railyard/internal/cni/state"
	"github.com/railyard-io/railyard/internal/netops"
)

// Multi-rail pods. A pod with a netdev per rail has several interfaces,
// often in one subnet (or subnets the main table routes through one of
// them), and Linux's host model then confuses the rails: it answers ARP
// for every address on every interface (rail B's address answered with
// rail A's MAC: "ARP flux"), and sends what leaves from rail B's address
// through whichever interface the main table picks, where the switch or
// the peer's reverse path filter may drop it. So every railyard-cni
// interface gets (config multiRail, default true; harmless with one):
//
//   - ARP only for its own addresses, announced from them, and a loose
//     reverse path filter (railSysctls);
//   - a routing table of its own (railTableBase + its ifindex in the
//     pod) holding its subnets' routes and its default route, and a rule
//     per address, "from <address> lookup <table>", so that traffic from
//     a rail's address leaves through that rail.
//
// The sysctls and the routes go with the interface when it leaves the
// pod (the kernel drops them), so DEL and a rollback only delete the
// rules (they name no interface); the table is in the record before the
// first rule is added.

// railTableBase + the interface's ifindex in the pod is its routing
// table; its rules have priority railRulePriority (before main's 32766).
const (
	railTableBase    = 10000
	railRulePriority = 10000
)

// railTable is the routing table of the pod interface with index ifindex.
func railTable(ifindex int) int { return railTableBase + ifindex }

// railSysctls are the per-interface IPv4 settings of a multi-rail
// interface (Documentation/networking/ip-sysctl.rst). They take effect
// as the larger of the interface's and conf/all's value.
var railSysctls = []struct{ knob, value string }{
	// Answer ARP only for an address configured on the interface the
	// request came in on.
	{"arp_ignore", "1"},
	// Use the best local address for the target (one of the outgoing
	// interface's) as the ARP source, never another rail's.
	{"arp_announce", "2"},
	// Loose reverse path filter: a packet is accepted when its source is
	// reachable through any interface. Strict (1) drops a rail's reply
	// whose source the main table routes through another rail.
	{"rp_filter", "2"},
}

// multiRail reports whether the pod interface gets multi-rail settings:
// multiRail on and addresses to route from.
func multiRail(s *session, res *current.Result) bool {
	return s.cfg.MultiRail && len(res.IPs) > 0
}

// chooseRailTable records in rec the routing table of the pod interface
// (railTable of its index in the pod) when it gets multi-rail settings.
// finish writes rec with it before setupMultiRail adds the first rule, so
// a DEL after a crash finds the rules.
func (p *Plugin) chooseRailTable(ctx context.Context, s *session, a Args, rec *state.Record, res *current.Result) error {
	if !multiRail(s, res) {
		return nil
	}
	l, err := p.Ops.Link(ctx, a.Netns, a.IfName)
	if err != nil {
		return err
	}
	rec.RailTable = railTable(l.Index)
	return nil
}

// setupMultiRail gives the pod interface its ARP settings, and its
// routing table (rec.RailTable, already in the record) its routes and the
// rules that select it, for the addresses of res. Nothing without
// addresses, or with multiRail off.
func (p *Plugin) setupMultiRail(ctx context.Context, s *session, a Args, rec *state.Record, res *current.Result) error {
	if !multiRail(s, res) {
		return nil
	}
	if rec.RailTable == 0 {
		return fmt.Errorf("multiRail: no routing table recorded for %s", a.IfName) // chooseRailTable was not run
	}
	o, pod := p.Ops, a.Netns
	if slices.ContainsFunc(res.IPs, func(ip *current.IPConfig) bool { return ip.Address.IP.To4() != nil }) {
		for _, sc := range railSysctls {
			if err := o.SetSysctl(ctx, pod, netops.IfaceSysctl("ipv4", a.IfName, sc.knob), sc.value); err != nil {
				return err
			}
		}
	}
	for _, r := range railRoutes(res, a.IfName, rec.RailTable) {
		if err := o.AddRoute(ctx, pod, r); err != nil {
			return err
		}
	}
	for _, r := range railRules(res, rec.RailTable) {
		if err := o.AddRule(ctx, pod, r); err != nil {
			return err
		}
	}
	return nil
}

// railRoutes are the routes of an interface's own table: each address's
// subnet on the link, the result's routes (through the address's gateway
// of their family when they name none), and, where an address has a
// gateway and no result route is a default one of its family, a default
// route through it.
func railRoutes(res *current.Result, ifname string, table int) []netops.Route {
	var out []netops.Route
	add := func(r netops.Route) {
		if !slices.ContainsFunc(out, func(o netops.Route) bool { return o.Dst.String() == r.Dst.String() }) {
			out = append(out, r)
		}
	}
	isDefault := func(n net.IPNet) bool { ones, _ := n.Mask.Size(); return ones == 0 }
	gw := map[bool]net.IP{} // IPv4? -> the first address's gateway of that family
	for _, ip := range res.IPs {
		subnet := net.IPNet{IP: ip.Address.IP.Mask(ip.Address.Mask), Mask: ip.Address.Mask}
		add(netops.Route{Table: table, Dst: &subnet, Link: ifname})
		v4 := ip.Address.IP.To4() != nil
		if ip.Gateway != nil && gw[v4] == nil {
			gw[v4] = ip.Gateway
		}
	}
	for _, r := range res.Routes {
		v4 := r.Dst.IP.To4() != nil
		dst := r.Dst
		rt := netops.Route{Table: table, Dst: &dst, GW: r.GW, Link: ifname}
		if rt.GW == nil {
			rt.GW = gw[v4]
		}
		if isDefault(dst) {
			rt.Dst = nil
			if rt.GW == nil {
				continue // a default route needs a gateway on an Ethernet rail
			}
		}
		add(rt)
	}
	for _, v4 := range []bool{true, false} {
		if g := gw[v4]; g != nil {
			add(netops.Route{Table: table, GW: g, Link: ifname}) // skipped when the result has one
		}
	}
	return out
}

// railRules are the rules sending what leaves from each of the
// interface's addresses to its table.
func railRules(res *current.Result, table int) []netops.Rule {
	var out []netops.Rule
	for _, ip := range res.IPs {
		bits := 128
		if ip.Address.IP.To4() != nil {
			bits = 32
		}
		out = append(out, netops.Rule{Priority: railRulePriority, Src: &net.IPNet{IP: ip.Address.IP, Mask: net.CIDRMask(bits, bits)}, Table: table})
	}
	return out
}

// removeRailRules deletes the rules of rec's routing table from the pod
// (its routes and sysctls go with the interface). A rule already gone is
// no error: DEL and a rollback converge.
func (p *Plugin) removeRailRules(ctx context.Context, rec *state.Record) error {
	if rec.RailTable == 0 {
		return nil
	}
	rules, err := p.Ops.Rules(ctx, rec.Netns)
	if err != nil {
		return fmt.Errorf("listing the pod's routing rules: %w", err)
	}
	for _, r := range rules {
		if r.Table != rec.RailTable || r.Priority != railRulePriority {
			continue
		}
		if err := p.Ops.DelRule(ctx, rec.Netns, r); err != nil && !errors.Is(err, syscall.ENOENT) {
			return fmt.Errorf("removing the pod's routing rule %s: %w", r, err)
		}
	}
	return nil
}

// checkMultiRail verifies the interface's ARP settings and its rules for
// the addresses ADD gave it.
func (p *Plugin) checkMultiRail(ctx context.Context, a Args, rec *state.Record, ips []*current.IPConfig) error {
	if rec.RailTable == 0 || len(ips) == 0 {
		return nil
	}
	res := &current.Result{IPs: ips}
	if slices.ContainsFunc(ips, func(ip *current.IPConfig) bool { return ip.Address.IP.To4() != nil }) {
		for _, sc := range railSysctls {
			v, err := p.Ops.Sysctl(ctx, a.Netns, netops.IfaceSysctl("ipv4", a.IfName, sc.knob))
			if err != nil {
				return err
			}
			if v != sc.value {
				return fmt.Errorf("interface %s has %s %s, want %s (multiRail)", a.IfName, sc.knob, v, sc.value)
			}
		}
	}
	have, err := p.Ops.Rules(ctx, a.Netns)
	if err != nil {
		return err
	}
	for _, want := range railRules(res, rec.RailTable) {
		if !slices.ContainsFunc(have, func(r netops.Rule) bool { return netops.SameRule(r, want) }) {
			return fmt.Errorf("interface %s: routing rule %s is missing (multiRail)", a.IfName, want)
		}
	}
	return nil
}
