package fabric

import (
	"errors"
	"fmt"
)

// Layout bounds.
const (
	MaxLayoutNodes = 1 << 20
	MaxLayoutRails = 64
)

// Layout is a cluster cabled by design: Nodes nodes numbered in order,
// node n in unit n/UnitNodes, each unit with its own switches. It is the
// one place that says which unit a node is in, for the generated
// clusters the fabric's tests and benchmark judge and for the
// simulator's scalable units (internal/sim), and it generates the ports
// a publisher would report on such a cluster.
type Layout struct {
	// Design is RailOptimized (NIC i of every node cabled to leaf i of
	// its unit, a scalable unit: "su2-leaf5") or TopOfRack (every NIC
	// of a rack's nodes on the rack's switch: "rack7-tor").
	Design Design
	Nodes  int
	// UnitNodes is the nodes per unit (a scalable unit, a rack); 0, or
	// at least Nodes: one unit.
	UnitNodes int
	// Rails is the rail NICs per node.
	Rails int
	// InfiniBand names switches by GUID ("0x98039b0300000105") as the
	// subnet does, with the ports' link layer "InfiniBand".
	InfiniBand bool
}

// Unit is the unit of node n (0 for every node of a one-unit layout).
func (l Layout) Unit(node int) int {
	if l.UnitNodes <= 0 {
		return 0
	}
	return node / l.UnitNodes
}

// Units is the number of units.
func (l Layout) Units() int {
	if l.UnitNodes <= 0 || l.Nodes <= 0 {
		return 1
	}
	return (l.Nodes + l.UnitNodes - 1) / l.UnitNodes
}

// NodeName is node n's name: its unit's, then its place in the unit
// ("su3-node07", "rack7-node2").
func (l Layout) NodeName(node int) string {
	u := l.Unit(node)
	return fmt.Sprintf("%s-node%02d", l.unitName(u), node-u*l.unitNodes())
}

// Switch is the switch rail r of unit u's nodes is cabled to.
func (l Layout) Switch(u, rail int) string {
	tor := l.Design == TopOfRack
	switch {
	case l.InfiniBand && tor:
		return fmt.Sprintf("0x98039b03%08x", uint32(u)<<8|0xff)
	case l.InfiniBand:
		return fmt.Sprintf("0x98039b03%08x", uint32(u)<<8|uint32(rail))
	case tor:
		return l.unitName(u) + "-tor"
	default:
		return fmt.Sprintf("%s-leaf%d", l.unitName(u), rail)
	}
}

func (l Layout) unitName(u int) string {
	if l.Design == TopOfRack {
		return fmt.Sprintf("rack%d", u+1)
	}
	return fmt.Sprintf("su%d", u+1)
}

func (l Layout) unitNodes() int {
	if l.UnitNodes <= 0 {
		return max(l.Nodes, 1)
	}
	return l.UnitNodes
}

// Validate returns every reason the layout cannot be generated.
func (l Layout) Validate() error {
	var errs []error
	if l.Design != RailOptimized && l.Design != TopOfRack {
		errs = append(errs, fmt.Errorf("design %q: want %s or %s", l.Design, RailOptimized, TopOfRack))
	}
	if l.Nodes < 1 || l.Nodes > MaxLayoutNodes {
		errs = append(errs, fmt.Errorf("nodes: %d, want 1 to %d", l.Nodes, MaxLayoutNodes))
	}
	if l.UnitNodes < 0 {
		errs = append(errs, fmt.Errorf("unit nodes: %d, want 0 (one unit) or more", l.UnitNodes))
	}
	if l.Rails < 1 || l.Rails > MaxLayoutRails {
		errs = append(errs, fmt.Errorf("rails: %d, want 1 to %d", l.Rails, MaxLayoutRails))
	}
	return errors.Join(errs...)
}

// Generate returns the nodes with the ports their publishers would
// report: rail i on NIC mlx5_i, 400 Gb/s, one ConnectX-7 release, each
// cabled as the design says, on the switch port of its place in the
// unit.
func (l Layout) Generate() ([]Node, error) {
	if err := l.Validate(); err != nil {
		return nil, fmt.Errorf("fabric layout: %w", err)
	}
	link, mtu := "Ethernet", 9000
	if l.InfiniBand {
		link, mtu = "InfiniBand", 4092
	}
	nodes := make([]Node, l.Nodes)
	for n := range nodes {
		u := l.Unit(n)
		at := n - u*l.unitNodes()
		nd := Node{Name: l.NodeName(n), Ports: make([]Port, l.Rails)}
		for r := range nd.Ports {
			swPort := at + 1
			if l.Design == TopOfRack {
				swPort = at*l.Rails + r + 1
			}
			p := Port{Rail: r, NIC: fmt.Sprintf("mlx5_%d", r), LinkLayer: link, Switch: l.Switch(u, r),
				SwitchPort: fmt.Sprintf("swp%d", swPort), RateGbps: 400, MTU: mtu, Model: "15b3:1021", Firmware: "28.39.1002"}
			p.Netdev = fmt.Sprintf("ens%dnp0", r+1)
			if l.InfiniBand {
				p.Netdev, p.SwitchPort = fmt.Sprintf("ibp%ds0", r+1), fmt.Sprint(swPort)
			}
			nd.Ports[r] = p
		}
		nodes[n] = nd
	}
	return nodes, nil
}
