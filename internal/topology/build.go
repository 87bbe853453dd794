package topology

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/railyard-io/railyard/internal/assign"
	"github.com/railyard-io/railyard/internal/pciaddr"
)

// Inventory is what discovery read from sysfs, before any reasoning: the raw
// input of Build. Tests may also write one by hand.
type Inventory struct {
	Root        string
	HostBridges []HostBridge
	Devices     []PCIDevice
	GPUs        []GPU
	NICs        []NIC
	Warnings    []Warning
	// Unreadable are PCI functions listed on the bus whose files could not
	// be read (each also a warning): on the node, but not in Devices.
	Unreadable []string
	// PairClasses are classes of GPU x NIC pairs known from a source that
	// sees more than the PCI tree (an NCCL topology file on a cloud VM that
	// hides its PCIe switches); they win over the tree's classes. A pair
	// not listed gets its class from the tree.
	PairClasses []PairClass
}

// PairClass is the class of one GPU x NIC pair and where it comes from.
type PairClass struct {
	GPU, NIC string
	Class    Class
	Source   string // "nccl-topo"
}

// Build derives the distance classes and rails from an inventory and returns
// the immutable Topology. It never fails: inconsistencies become warnings.
func Build(in Inventory) *Topology {
	t := &Topology{
		Root:        in.Root,
		HostBridges: slices.Clone(in.HostBridges),
		GPUs:        slices.Clone(in.GPUs),
		NICs:        slices.Clone(in.NICs),
		Warnings:    slices.Clone(in.Warnings),
		devices:     make(map[string]*PCIDevice, len(in.Devices)),
		gpuIdx:      make(map[string]int, len(in.GPUs)),
		nicIdx:      make(map[string]int, len(in.NICs)),
		vfOwner:     map[string]int{},
		unreadable:  make(map[string]bool, len(in.Unreadable)),
	}
	for _, a := range in.Unreadable {
		t.unreadable[a] = true
	}
	slices.SortStableFunc(t.HostBridges, func(a, b HostBridge) int {
		// Numeric like the devices (pci10000:00 after pcifffe:00); a name
		// that does not parse sorts last, by name.
		ha, ea := pciaddr.ParseHostBridge(a.Name)
		hb, eb := pciaddr.ParseHostBridge(b.Name)
		switch {
		case ea == nil && eb == nil:
			return ha.Compare(hb)
		case ea == nil:
			return -1
		case eb == nil:
			return 1
		}
		return cmp.Compare(a.Name, b.Name)
	})
	pciaddr.SortByAddress(t.GPUs, func(g GPU) string { return g.PCI }) // numeric: domain 10000 after ffff
	pciaddr.SortByAddress(t.NICs, func(n NIC) string { return n.PCI })
	for i := range in.Devices {
		d := in.Devices[i]
		t.devices[d.Address] = &d
	}
	for i, g := range t.GPUs {
		t.gpuIdx[g.PCI] = i
	}
	for i := range t.NICs {
		n := &t.NICs[i]
		t.nicIdx[n.PCI] = i
		n.VFCount = len(n.VFs)
		for _, vf := range n.VFs {
			t.vfOwner[vf.PCI] = i
		}
	}
	given := make(map[[2]string]PairClass, len(in.PairClasses))
	for _, pc := range in.PairClasses {
		given[[2]string{pc.GPU, pc.NIC}] = pc
	}
	t.Links = make([]Link, 0, len(t.GPUs)*len(t.NICs))
	for _, g := range t.GPUs {
		for _, n := range t.NICs {
			if pc, ok := given[[2]string{g.PCI, n.PCI}]; ok && pc.Class != ClassUnknown {
				t.Links = append(t.Links, Link{GPU: g.PCI, NIC: n.PCI, Class: pc.Class, Source: pc.Source})
				continue
			}
			t.Links = append(t.Links, Link{GPU: g.PCI, NIC: n.PCI, Class: t.distance(g.PCI, n.PCI)})
		}
	}
	rails, err := t.rails()
	if err != nil {
		t.Warnings = append(t.Warnings, Warning{Message: "no rails: " + err.Error()})
	}
	t.Rails = rails
	for _, r := range t.Rails {
		if r.Class == SYS {
			t.Warnings = append(t.Warnings, Warning{Path: r.GPU, Message: "GPU has no NIC closer than SYS"})
		}
		if n, ok := t.NIC(r.NIC); ok && !n.Healthy() {
			t.Warnings = append(t.Warnings, Warning{Path: r.GPU, Message: fmt.Sprintf(
				"GPU railed to %s (%s) whose port is not ACTIVE: no healthy NIC is as close (%s)", n.RDMA, n.PCI, r.Class)})
		}
	}
	return t
}

// Device returns the PCI function at addr.
func (t *Topology) Device(addr string) (PCIDevice, bool) {
	d, ok := t.devices[addr]
	if !ok {
		return PCIDevice{}, false
	}
	return *d, true
}

// Listed reports whether the PCI function at addr was on the bus when the
// node was discovered: read (Device) or listed but unreadable. A function
// not listed is gone from the node (removed, or a VF destroyed).
func (t *Topology) Listed(addr string) bool {
	_, ok := t.devices[addr]
	return ok || t.unreadable[addr]
}

// GPU returns the GPU at addr.
func (t *Topology) GPU(addr string) (GPU, bool) {
	i, ok := t.gpuIdx[addr]
	if !ok {
		return GPU{}, false
	}
	return t.GPUs[i], true
}

// NIC returns the physical function at addr, or the PF owning the VF at addr.
func (t *Topology) NIC(addr string) (NIC, bool) {
	i, ok := t.nicIndex(addr)
	if !ok {
		return NIC{}, false
	}
	return t.NICs[i], true
}

// VF returns the virtual function at addr and its PF.
func (t *Topology) VF(addr string) (VF, NIC, bool) {
	i, ok := t.vfOwner[addr]
	if !ok {
		return VF{}, NIC{}, false
	}
	for _, vf := range t.NICs[i].VFs {
		if vf.PCI == addr {
			return vf, t.NICs[i], true
		}
	}
	return VF{}, NIC{}, false
}

func (t *Topology) nicIndex(addr string) (int, bool) {
	if i, ok := t.nicIdx[addr]; ok {
		return i, true
	}
	i, ok := t.vfOwner[addr]
	return i, ok
}

// Class returns the distance class between a GPU and a NIC; nic may be a
// PF or one of its VFs (a VF has its PF's distance). ClassUnknown when
// either is not part of the model.
func (t *Topology) Class(gpu, nic string) Class {
	gi, ok := t.gpuIdx[gpu]
	if !ok {
		return ClassUnknown
	}
	ni, ok := t.nicIndex(nic)
	if !ok {
		return ClassUnknown
	}
	return t.Links[gi*len(t.NICs)+ni].Class
}

// Rail returns the rail (assigned NIC) of a GPU.
func (t *Topology) Rail(gpu string) (Link, bool) {
	i, ok := t.gpuIdx[gpu]
	if !ok || i >= len(t.Rails) {
		return Link{}, false
	}
	return t.Rails[i], true
}

// NICRails returns the rail index of every NIC that is some GPU's rail:
// the index of the first GPU (in GPU order) it serves. On a node with one
// NIC per GPU that is the NIC's own index in GPU order; on an 8-GPU/4-NIC
// node the NICs are rails 0, 2, 4 and 6. A rail-optimized cluster cables
// the NICs of the same rail index of every node to the same leaf. The one
// rail numbering of pools, DRA attributes and the fabric's labels.
func (t *Topology) NICRails() map[string]int {
	out := make(map[string]int, len(t.NICs))
	for i, r := range t.Rails {
		if _, seen := out[r.NIC]; !seen {
			out[r.NIC] = i
		}
	}
	return out
}

// ancestors returns the bridges above addr, host bridge first.
func (t *Topology) ancestors(addr string) []string {
	var chain []string
	seen := map[string]bool{addr: true}
	for d, ok := t.devices[addr]; ok && d.Parent != ""; d, ok = t.devices[d.Parent] {
		if seen[d.Parent] {
			break // a loop in a corrupt inventory; stop rather than spin
		}
		seen[d.Parent] = true
		chain = append(chain, d.Parent)
	}
	slices.Reverse(chain)
	return chain
}

// switchGroup returns the switch a bridge belongs to. Bridges alternate
// below a host bridge: a root port (depth 0) is its own group; a switch
// upstream port (odd depth) heads a group; a downstream port (even depth
// > 0) belongs to the group of its upstream port.
func switchGroup(chain []string, depth int) string {
	if depth > 0 && depth%2 == 0 {
		return chain[depth-1]
	}
	return chain[depth]
}

func (t *Topology) numa(addr string) int {
	d, ok := t.devices[addr]
	if !ok {
		return -1
	}
	if d.NUMA >= 0 {
		return d.NUMA
	}
	for _, hb := range t.HostBridges {
		if hb.Name == d.HostBridge {
			return hb.NUMA
		}
	}
	return -1
}

// distance computes the class between two PCI functions by walking to their
// lowest common ancestor.
func (t *Topology) distance(a, b string) Class {
	da, okA := t.devices[a]
	db, okB := t.devices[b]
	if !okA || !okB {
		return ClassUnknown
	}
	if da.HostBridge != db.HostBridge {
		na, nb := t.numa(a), t.numa(b)
		if na == nb {
			return NODE // also when both are unknown: a single-node machine
		}
		return SYS
	}
	ca, cb := t.ancestors(a), t.ancestors(b)
	k := 0
	for k < len(ca) && k < len(cb) && ca[k] == cb[k] {
		k++
	}
	if k == 0 {
		return PHB
	}
	groups := map[string]bool{}
	for _, c := range [][]string{ca, cb} {
		for depth := k - 1; depth < len(c); depth++ {
			groups[switchGroup(c, depth)] = true
		}
	}
	if len(groups) == 1 {
		return PIX
	}
	return PXB
}

// rails solves the GPU -> NIC assignment exactly. Every NIC has
// ceil(GPUs/NICs) slots. A slot of a healthy NIC seats a GPU on that NIC; a
// slot of an unhealthy NIC (a port not ACTIVE) seats it either on that NIC
// or, as a stand-in, on the GPU's best healthy NIC: the share of a NIC that
// is down goes to healthy ones. The objective, in order: the minimal total
// class rank; then the fewest GPUs on unhealthy NICs (so a GPU stays on a
// NIC that is down only when no healthy NIC is as close); then the fewest
// GPUs seated as stand-ins; then spreading GPUs over NICs (a NIC's second
// slot costs more than any NIC's first); then the lowest PCI addresses, as
// the solver is deterministic over sorted input.
func (t *Topology) rails() ([]Link, error) {
	g, n := len(t.GPUs), len(t.NICs)
	if g == 0 || n == 0 {
		return nil, nil
	}
	capacity := (g + n - 1) / n
	// Weights that make the sums lexicographic: the slot sum stays below
	// g*capacity, the stand-in and unhealthy counts below g+1.
	slotLimit := int64(g) * int64(capacity)
	standInWeight := slotLimit
	downWeight := int64(g+1)*standInWeight + slotLimit
	rankWeight := int64(g+1)*downWeight + downWeight
	healthy := make([]bool, n)
	for j := range t.NICs {
		healthy[j] = t.NICs[j].Healthy()
	}
	// bestHealthy[i] is GPU i's closest healthy NIC (lowest address on
	// ties), -1 when there is none.
	bestHealthy := make([]int, g)
	for i := range bestHealthy {
		bestHealthy[i] = -1
		for j := 0; j < n; j++ {
			if healthy[j] && (bestHealthy[i] < 0 || t.Links[i*n+j].Class.Rank() < t.Links[i*n+bestHealthy[i]].Class.Rank()) {
				bestHealthy[i] = j
			}
		}
	}
	cost := make([][]int64, g)
	seat := make([][]int, g) // the NIC a GPU sits on in each column
	for i := range cost {
		cost[i] = make([]int64, n*capacity)
		seat[i] = make([]int, n*capacity)
		for j := 0; j < n; j++ {
			c, at := int64(t.Links[i*n+j].Class.Rank())*rankWeight, j
			if !healthy[j] {
				c += downWeight
				if b := bestHealthy[i]; b >= 0 {
					if alt := int64(t.Links[i*n+b].Class.Rank())*rankWeight + standInWeight; alt < c {
						c, at = alt, b
					}
				}
			}
			for s := 0; s < capacity; s++ {
				cost[i][s*n+j] = c + int64(s)
				seat[i][s*n+j] = at
			}
		}
	}
	cols, _, err := assign.Solve(cost)
	if err != nil {
		return nil, fmt.Errorf("assigning GPUs to NICs: %w", err)
	}
	rails := make([]Link, g)
	for i, col := range cols {
		rails[i] = t.Links[i*n+seat[i][col]]
	}
	return rails, nil
}
