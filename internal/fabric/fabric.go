package fabric

import (
	"fmt"
	"sort"
	"strings"
)

// Port is one RDMA NIC port of a node and what it is cabled to.
type Port struct {
	// Rail is the port's in-node rail: the index of its NIC among the
	// node's rails (topology.Rails, in GPU order). -1 for a NIC no GPU
	// uses.
	Rail int `json:"rail"`
	// NIC names the RDMA device ("mlx5_3"), Netdev its netdev ("ens7f0np0").
	NIC    string `json:"nic"`
	Netdev string `json:"netdev,omitempty"`
	// LinkLayer is "Ethernet" (RoCE: LLDP tells the neighbor) or
	// "InfiniBand" (the subnet does).
	LinkLayer string `json:"linkLayer,omitempty"`
	// Switch is the neighbor's switch (its LLDP system name, else its
	// chassis ID; for InfiniBand the switch GUID); "" when the port has no
	// neighbor, and NoNeighbor says why.
	Switch     string `json:"switch,omitempty"`
	SwitchPort string `json:"switchPort,omitempty"`
	NoNeighbor string `json:"noNeighbor,omitempty"`
	// StaleRounds is how many of the publisher's rounds in a row have not
	// heard Switch, which it still publishes: a neighbor is held for a few
	// rounds (a missed frame, a switch agent restarting) before the port
	// counts as dark. NoNeighbor then says why the last round heard
	// nothing. 0 when heard in the last round.
	StaleRounds int `json:"staleRounds,omitempty"`
	// LastSwitch is the switch the port last reached, kept once it has
	// none (not heard for longer than the hold, withdrawn by a shutdown
	// frame, or its NIC no longer found): the rail is degraded, and the
	// node's leaf set still counts it. "" while Switch is set.
	LastSwitch string `json:"lastSwitch,omitempty"`
	// Switches lists every neighbor's switch when the port heard more
	// than one neighbor in its round (two switches, or two ports of one
	// switch), and SwitchPorts each one's port, in the same order; Switch
	// and SwitchPort are then one of them (the one published before while
	// it is still heard, else the first): a port hearing two neighbors is
	// reported as such instead of flipping between them from round to
	// round. Empty otherwise.
	Switches    []string `json:"switches,omitempty"`
	SwitchPorts []string `json:"switchPorts,omitempty"`
	// RateGbps and MTU are the port's link rate and its netdev's MTU (0 if
	// unknown).
	RateGbps float64 `json:"rateGbps,omitempty"`
	MTU      int     `json:"mtu,omitempty"`
	// Model is the NIC's PCI vendor:device ("15b3:1021", a ConnectX-7),
	// as doctor names models, and Firmware its RDMA device's fw_ver
	// ("28.39.1002"); "" when unknown (an annotation written before they
	// were published, or an unreadable fw_ver).
	Model    string `json:"model,omitempty"`
	Firmware string `json:"firmware,omitempty"`
}

// Node is one node's ports.
type Node struct {
	Name  string `json:"name"`
	Ports []Port `json:"ports"`
}

// Severity of a finding; the exit status of `railyard fabric` follows
// doctor's: 0 nothing wrong, 1 warnings, 2 failures.
type Severity string

// Severities.
const (
	Warn Severity = "warn"
	Fail Severity = "fail"
)

// Kind names what a finding is about; docs/fabric.md explains each.
type Kind string

// Kinds of findings.
const (
	// KindSwap: two NICs of one node cabled to each other's rail leaf.
	KindSwap Kind = "swap"
	// KindRotation: three or more NICs of one node, each cabled to the
	// next one's rail leaf.
	KindRotation Kind = "rotation"
	// KindMisplaced: a NIC cabled to another rail's leaf of its unit,
	// not as part of a swap or a rotation.
	KindMisplaced Kind = "misplaced"
	// KindDark: a NIC with no neighbor while its unit's peers on the
	// rail have one.
	KindDark Kind = "dark"
	// KindDarkNode: a node none of whose rail NICs has a neighbor while
	// other nodes' have.
	KindDarkNode Kind = "dark-node"
	// KindDarkRail: no node of a unit has a neighbor on a rail its other
	// rails have.
	KindDarkRail Kind = "dark-rail"
	// KindOtherUnit: a NIC cabled to a leaf of another unit.
	KindOtherUnit Kind = "other-unit"
	// KindStray: a NIC cabled to a switch no peer of its unit uses on
	// the rail.
	KindStray Kind = "stray"
	// KindSharedLeaf: a leaf of a rail-optimized unit that carries
	// several whole rails.
	KindSharedLeaf Kind = "shared-leaf"
	// KindSeveralNeighbors: a NIC that heard more than one switch.
	KindSeveralNeighbors Kind = "several-neighbors"
	// KindRate and KindMTU: a NIC whose link rate or MTU differs from
	// its unit's peers' on the rail.
	KindRate Kind = "rate"
	KindMTU  Kind = "mtu"
	// KindFirmware: a NIC off its model's firmware release.
	KindFirmware Kind = "firmware"
	// KindNoNeighbors: no rail port of any node has a neighbor; nothing
	// about the wiring can be judged.
	KindNoNeighbors Kind = "no-neighbors"
)

// Finding is one thing wrong with the wiring. Node is "" for a finding
// about a switch or a whole rail of a unit (Switch names it), and Rail
// is -1 for one about a whole node or the cluster.
type Finding struct {
	Severity Severity `json:"severity"`
	Kind     Kind     `json:"kind"`
	Node     string   `json:"node"`
	Rail     int      `json:"rail"`
	NIC      string   `json:"nic,omitempty"`
	Switch   string   `json:"switch,omitempty"`
	Message  string   `json:"message"`
	Fix      string   `json:"fix"`
}

// Design is how a unit, or the cluster, is cabled.
type Design string

// Designs.
const (
	// RailOptimized: each leaf takes one rail of its unit's nodes (NIC i
	// of every node on leaf i of its unit).
	RailOptimized Design = "rail-optimized"
	// TopOfRack: one switch takes every rail of its nodes.
	TopOfRack Design = "top-of-rack"
	// Mixed: leaves take several rails but not all (a unit), or units
	// differ in design (the cluster).
	Mixed Design = "mixed"
	// Unknown: no port has a neighbor.
	Unknown Design = "unknown"
)

// Report is the cluster's wiring: its units (groups of nodes sharing
// leaves), each unit's leaf per rail, the rail x node matrix of switches,
// and the findings.
type Report struct {
	Nodes []string `json:"nodes"`
	Rails []Rail   `json:"rails"`
	// Design is the units' design when they share one, else Mixed;
	// Unknown when no port has a neighbor.
	Design Design `json:"design"`
	// Units are the groups of nodes cabled to the same leaves, numbered
	// from 1 in the order of their first node.
	Units []Unit `json:"units"`
	// Isolated is true when the design is rail-optimized and, in every
	// unit, each rail has a leaf of its own: a job's pods must use the
	// same rails.
	Isolated bool      `json:"isolated"`
	Findings []Finding `json:"findings"`
}

// Rail is one rail across the nodes.
type Rail struct {
	Index int `json:"index"`
	// Leaf is the rail's leaf when every unit has the same one (a cluster
	// of one unit); "" otherwise (Units gives each unit's).
	Leaf string `json:"leaf"`
	// Switches holds, per node (Report.Nodes order), the switch its NIC of
	// this rail reaches: "" without a neighbor, "-" without such a NIC,
	// the switches joined by "|" where the port heard several.
	Switches []string `json:"switches"`
}

// Unit is a group of nodes cabled to the same leaves: a scalable unit of
// a rail-optimized cluster, or a rack of a top-of-rack one.
type Unit struct {
	// Index numbers the unit from 1 (Report.Units[Index-1]), as the
	// findings name it ("unit 3").
	Index  int    `json:"index"`
	Design Design `json:"design"`
	// Nodes are the unit's nodes, by name; Leaves the switches most of
	// whose ports are its nodes'.
	Nodes  []string `json:"nodes"`
	Leaves []string `json:"leaves"`
	// Rails gives, per rail its nodes have, the unit's leaf ("" when no
	// port of the rail reaches one of the unit's leaves).
	Rails []UnitRail `json:"rails"`
}

// UnitRail is one rail's leaf in a unit.
type UnitRail struct {
	Index int    `json:"index"`
	Leaf  string `json:"leaf"`
}

// Status is the exit status doctor uses: 0, 1 for warnings, 2 for failures.
func (r Report) Status() int {
	s := 0
	for _, f := range r.Findings {
		switch f.Severity {
		case Fail:
			return 2
		case Warn:
			s = 1
		}
	}
	return s
}

// Analyze puts the nodes' ports side by side, learns the fabric's units
// and design from what the ports hear (units.go), and judges every port
// against its own unit (judge.go). Ports with no rail (-1) are left out
// of the rails (no GPU uses them) but not of the firmware comparison,
// which is per model (firmware).
func Analyze(nodes []Node) Report {
	nodes = append([]Node(nil), nodes...)
	sort.SliceStable(nodes, func(i, j int) bool { return nodes[i].Name < nodes[j].Name })
	m := newModel(nodes)
	rep := Report{Nodes: make([]string, len(nodes)), Design: m.design}
	for i, n := range nodes {
		rep.Nodes[i] = n.Name
	}
	rep.Rails = m.matrix()
	rep.Units = m.report()
	rep.Isolated = m.isolated()
	rep.Findings = m.judge()
	rep.Findings = append(rep.Findings, firmware(m.all)...)
	return rep
}

// portAt is one port of the analysis: its node (index in sorted order
// and name), the port, and its switch interned (sw: an index into
// model.switches; noSwitch or several).
type portAt struct {
	node int
	name string
	sw   int32
	*Port
}

// Values of portAt.sw that are not a switch.
const (
	noSwitch int32 = -1 // no neighbor
	several  int32 = -2 // more than one neighbor
)

// neighbors is the port's distinct switches.
func (p *Port) neighbors() []string {
	var out []string
	for _, s := range append([]string{p.Switch}, p.Switches...) {
		if s != "" && !contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// HeardNeighbors names every distinct neighbor the port heard, as
// "switch port P" (or "switch" where the port is unknown): its Switches
// with their SwitchPorts, else its Switch and SwitchPort. More than one
// is a fault: the port hears two neighbors.
func (p Port) HeardNeighbors() []string {
	var out []string
	add := func(sw, port string) {
		if sw == "" {
			return
		}
		if port != "" {
			sw += " port " + port
		}
		if !contains(out, sw) {
			out = append(out, sw)
		}
	}
	if len(p.Switches) == 0 || !contains(p.Switches, p.Switch) {
		add(p.Switch, p.SwitchPort)
	}
	for i, sw := range p.Switches {
		port := ""
		if i < len(p.SwitchPorts) {
			port = p.SwitchPorts[i]
		}
		add(sw, port)
	}
	return out
}

func contains(v []string, s string) bool {
	for _, x := range v {
		if x == s {
			return true
		}
	}
	return false
}

func num(v float64, unit string) string {
	if v <= 0 {
		return ""
	}
	return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.1f", v), "0"), ".") + unit
}

func ints(v []int) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, ",")
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func (s Severity) String() string { return string(s) }
