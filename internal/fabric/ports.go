package fabric

import (
	"fmt"
	"slices"
	"sort"

	"github.com/railyard-io/railyard/internal/lldp"
	"github.com/railyard-io/railyard/internal/topology"
)

// PortsOf lists a node's NIC ports with their rails and no neighbor yet.
// A port's rail is its NIC's (topology.NICRails: the index of the first
// GPU it serves, as pools and DRA number them), so on a rail-optimized
// node the NIC serving GPU i's share is cabled to leaf i. A NIC no GPU
// uses has rail -1. One port per NIC: its first netdev (each port of a
// multi-port card is its own PCI function, hence its own NIC). Each port
// carries its NIC's model (PCI vendor:device) and firmware version.
func PortsOf(t *topology.Topology) []Port {
	rail := t.NICRails()
	ports := make([]Port, 0, len(t.NICs))
	for _, n := range t.NICs {
		p := Port{Rail: -1, NIC: n.Name(), Netdev: n.Netdev, LinkLayer: n.LinkLayer,
			Model: fmt.Sprintf("%04x:%04x", n.Vendor, n.Device), Firmware: n.Firmware}
		if r, ok := rail[n.PCI]; ok {
			p.Rail = r
		}
		if len(n.Ports) > 0 {
			p.RateGbps = n.Ports[0].RateGbps
		}
		ports = append(ports, p)
	}
	sort.SliceStable(ports, func(i, j int) bool { return railOrder(ports[i].Rail) < railOrder(ports[j].Rail) })
	return ports
}

// railOrder puts ports without a rail last.
func railOrder(r int) int {
	if r < 0 {
		return int(^uint(0) >> 1)
	}
	return r
}

// HearsLLDP reports whether LLDP can tell the port's neighbor: an
// Ethernet (RoCE) port with a netdev. An InfiniBand port's neighbor comes
// from the subnet instead: a directed-route query (internal/ibneighbor,
// through nodefabric.Neighbors).
func (p Port) HearsLLDP() bool { return p.Netdev != "" && p.LinkLayer != "InfiniBand" }

// WithNeighbors fills each port's switch from what LLDP heard on its
// netdev (results of lldp.ReceiveAll, by port name), or says why it has
// no neighbor.
func WithNeighbors(ports []Port, results []lldp.Result) []Port {
	byName := map[string]lldp.Result{}
	for _, r := range results {
		byName[r.Port] = r
	}
	out := append([]Port(nil), ports...)
	for i := range out {
		p := &out[i]
		r, ok := byName[p.Netdev]
		switch {
		case p.LinkLayer == "InfiniBand":
			p.NoNeighbor = "InfiniBand: no LLDP; the neighbor comes from a directed-route query (smpquery), not asked"
		case p.Netdev == "":
			p.NoNeighbor = "no netdev to hear LLDP on"
		case !ok:
			p.NoNeighbor = "not listened on"
		case r.Err != nil:
			p.NoNeighbor = r.Err.Error()
		case r.Neighbor != nil:
			heard(p, append([]lldp.Neighbor{*r.Neighbor}, r.Others...))
		}
	}
	return out
}

// heard sets a port's switch from the neighbors LLDP heard on it: one
// names Switch and SwitchPort; several (distinct as switch and port) fill
// Switches and SwitchPorts, sorted, and Switch and SwitchPort are the
// first. Neighbors whose switch and port collide (two chassis under one
// system name) are named by their chassis IDs.
func heard(p *Port, nbs []lldp.Neighbor) {
	type entry struct{ sw, port string }
	name := func(n lldp.Neighbor) entry { return entry{n.Switch(), n.PortID} }
	count := map[entry]int{}
	for _, n := range nbs {
		count[name(n)]++
	}
	var es []entry
	for _, n := range nbs {
		e := name(n)
		if count[e] > 1 {
			e.sw = n.ChassisID
		}
		if !slices.Contains(es, e) {
			es = append(es, e)
		}
	}
	sort.Slice(es, func(i, j int) bool {
		if es[i].sw != es[j].sw {
			return es[i].sw < es[j].sw
		}
		return es[i].port < es[j].port
	})
	p.Switch, p.SwitchPort, p.Switches, p.SwitchPorts = es[0].sw, es[0].port, nil, nil
	if len(es) > 1 {
		for _, e := range es {
			p.Switches = append(p.Switches, e.sw)
			p.SwitchPorts = append(p.SwitchPorts, e.port)
		}
	}
}
