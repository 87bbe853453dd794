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

// Finding is one thing wrong with the wiring.
type Finding struct {
	Severity Severity `json:"severity"`
	Node     string   `json:"node"`
	Rail     int      `json:"rail"`
	NIC      string   `json:"nic,omitempty"`
	Message  string   `json:"message"`
	Fix      string   `json:"fix"`
}

// Report is the cluster's wiring: per rail the leaf most nodes reach, the
// rail x node matrix of switches, and the findings.
type Report struct {
	Nodes []string `json:"nodes"`
	Rails []Rail   `json:"rails"`
	// Isolated is true when every rail has its own leaf (no leaf is the
	// majority of two rails): a job's pods must use the same rails.
	Isolated bool      `json:"isolated"`
	Findings []Finding `json:"findings"`
}

// Rail is one rail across the nodes.
type Rail struct {
	Index int `json:"index"`
	// Leaf is the switch most nodes' NIC of this rail reach ("" if none has
	// a neighbor).
	Leaf string `json:"leaf"`
	// Switches holds, per node (Report.Nodes order), the switch its NIC of
	// this rail reaches: "" without a neighbor, "-" without such a NIC.
	Switches []string `json:"switches"`
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

// Analyze puts the nodes' ports side by side and finds what disagrees.
// Ports with no rail (-1) are left out of the rails (no GPU uses them)
// but not of the firmware comparison, which is per model (firmware).
func Analyze(nodes []Node) Report {
	nodes = append([]Node(nil), nodes...)
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].Name < nodes[j].Name })
	var rep Report
	byRail := map[int][]*portAt{}
	var all []*portAt
	for ni, n := range nodes {
		rep.Nodes = append(rep.Nodes, n.Name)
		for pi := range n.Ports {
			p := &portAt{node: ni, name: n.Name, Port: &n.Ports[pi]}
			all = append(all, p)
			if p.Rail >= 0 {
				byRail[p.Rail] = append(byRail[p.Rail], p)
			}
		}
	}
	indexes := make([]int, 0, len(byRail))
	for r := range byRail {
		indexes = append(indexes, r)
	}
	sort.Ints(indexes)

	leafOf := leaves(indexes, byRail)
	railsOf := map[string][]int{} // leaf -> rails it is the leaf of
	for _, r := range indexes {
		leaf := leafOf[r]
		if leaf != "" {
			railsOf[leaf] = append(railsOf[leaf], r)
		}
		rail := Rail{Index: r, Leaf: leaf, Switches: make([]string, len(nodes))}
		for i := range rail.Switches {
			rail.Switches[i] = "-"
		}
		for _, p := range byRail[r] {
			rail.Switches[p.node] = p.Switch
		}
		rep.Rails = append(rep.Rails, rail)
	}
	rep.Isolated = len(railsOf) > 0
	for _, rails := range railsOf {
		if len(rails) > 1 {
			rep.Isolated = false
		}
	}

	for _, r := range indexes {
		for _, p := range byRail[r] {
			rep.Findings = append(rep.Findings, cabling(r, p, leafOf, railsOf)...)
		}
		rep.Findings = append(rep.Findings, mixed(r, byRail[r], "link rate", func(p *portAt) string { return num(p.RateGbps, " Gb/s") })...)
		rep.Findings = append(rep.Findings, mixed(r, byRail[r], "MTU", func(p *portAt) string { return num(float64(p.MTU), "") })...)
	}
	rep.Findings = append(rep.Findings, firmware(all)...)
	return rep
}

type portAt struct {
	node int
	name string
	*Port
}

// cabling judges one port against its rail's leaf.
func cabling(r int, p *portAt, leafOf map[int]string, railsOf map[string][]int) []Finding {
	leaf := leafOf[r]
	f := Finding{Node: p.name, Rail: r, NIC: p.NIC}
	switch {
	case p.Switch == "" && leaf != "":
		why := p.NoNeighbor
		if why == "" {
			why = "no neighbor reported"
		}
		f.Severity, f.Message = Fail, fmt.Sprintf("rail %d NIC %s has no neighbor (%s) while its peers reach %s", r, p.NIC, why, leaf)
		f.Fix = "check the cable and the switch port; on ConnectX, the firmware may consume LLDP (mlxconfig LLDP_NB_RX_MODE)"
	case p.Switch == "" || p.Switch == leaf:
		return nil
	case len(railsOf[p.Switch]) > 0:
		f.Severity = Fail
		f.Message = fmt.Sprintf("rail %d NIC %s reaches %s (port %s), the leaf of rail %s; rail %d's leaf is %s", r, p.NIC, p.Switch, orDash(p.SwitchPort), ints(railsOf[p.Switch]), r, orDash(leaf))
		f.Fix = fmt.Sprintf("a swapped cable: move %s's cable to %s (NCCL rings across nodes then meet on the same leaf)", p.NIC, orDash(leaf))
	default:
		f.Severity = Warn
		f.Message = fmt.Sprintf("rail %d NIC %s reaches %s, which no peer on rail %d uses (they reach %s)", r, p.NIC, p.Switch, r, orDash(leaf))
		f.Fix = "the node is missing from the leaf its peers share: recable it, or check that the leaf joins the rail's fabric"
	}
	return []Finding{f}
}

// mixed warns, per node in the minority, when one rail's ports disagree
// on a value (link rate, MTU); unknown values are left out.
func mixed(r int, ports []*portAt, what string, value func(*portAt) string) []Finding {
	odd, common, _, _ := minority(ports, value)
	var out []Finding
	for _, p := range odd {
		out = append(out, Finding{Severity: Warn, Node: p.name, Rail: r, NIC: p.NIC,
			Message: fmt.Sprintf("rail %d NIC %s has %s %s; its peers have %s", r, p.NIC, what, value(p), common),
			Fix:     fmt.Sprintf("one %s per rail: a slower or smaller port limits every ring through it", what)})
	}
	return out
}

// minority returns the ports whose value is known (non-empty) and differs
// from the most common one (majority: ties go to the smallest), with that
// value, how many ports have it and how many have a known value.
func minority(ports []*portAt, value func(*portAt) string) (odd []*portAt, common string, n, known int) {
	common, n, known = top(ports, value, nil)
	for _, p := range ports {
		if v := value(p); v != "" && v != common {
			odd = append(odd, p)
		}
	}
	return odd, common, n, known
}

// leaves decides each rail's leaf. A switch that more than half of a
// rail's ports with a neighbor reach is that rail's leaf, even when it is
// also another rail's (one switch for several rails: a fabric without
// isolated rails). A rail without such a switch (two nodes with a cable
// swapped disagree one to one) takes, in rail order, its most common
// switch that no other rail has taken, so a swap is reported on one side
// instead of two rails sharing a leaf.
func leaves(indexes []int, byRail map[int][]*portAt) map[int]string {
	leafOf := map[int]string{}
	taken := map[string]bool{}
	sw := func(p *portAt) string { return p.Switch }
	for _, r := range indexes {
		if leaf, n, known := top(byRail[r], sw, nil); 2*n > known {
			leafOf[r] = leaf
			taken[leaf] = true
		}
	}
	for _, r := range indexes {
		if _, ok := leafOf[r]; ok {
			continue
		}
		leaf, _, _ := top(byRail[r], sw, taken)
		if leaf == "" {
			leaf, _, _ = top(byRail[r], sw, nil)
		}
		leafOf[r] = leaf
		taken[leaf] = true
	}
	return leafOf
}

// top returns the most common non-empty value not in skip (ties: the
// smallest), its count, and how many ports have a non-empty value.
func top(ports []*portAt, value func(*portAt) string, skip map[string]bool) (string, int, int) {
	count := map[string]int{}
	known := 0
	for _, p := range ports {
		if v := value(p); v != "" {
			known++
			if !skip[v] {
				count[v]++
			}
		}
	}
	best := ""
	for v, c := range count {
		if c > count[best] || (c == count[best] && v < best) {
			best = v
		}
	}
	return best, count[best], known
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
