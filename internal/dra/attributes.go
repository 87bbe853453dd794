package dra

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	resourceapi "k8s.io/api/resource/v1"

	"github.com/railyard-io/railyard/internal/pciaddr"
	"github.com/railyard-io/railyard/internal/pool"
	"github.com/railyard-io/railyard/internal/topology"
)

// values interns attribute values within one Build: devices with the same
// value share one pointer (most of a VF's attributes are its PF's), which
// saves most of the allocations of a 2048-VF node. Published devices are
// read-only, like the topology they come from.
type values struct {
	strs map[string]*string
	ints map[int64]*int64
	yes  *bool
	no   *bool
}

func newValues() *values {
	yes, no := true, false
	return &values{strs: map[string]*string{}, ints: map[int64]*int64{}, yes: &yes, no: &no}
}

func (v *values) str(s string) *string {
	p, ok := v.strs[s]
	if !ok {
		c := s // only a new value escapes, not every argument
		p = &c
		v.strs[c] = p
	}
	return p
}

func (v *values) int(n int64) *int64 {
	p, ok := v.ints[n]
	if !ok {
		c := n
		p = &c
		v.ints[c] = p
	}
	return p
}

// attrs is a device's attribute map under construction. It never holds
// more than the API's limit of attributes; a value longer than the API's
// limit is left out and noted.
type attrs struct {
	m       map[resourceapi.QualifiedName]resourceapi.DeviceAttribute
	vals    *values
	dropped []string
	// room is how many attributes fit: the API's limit of attributes and
	// capacities together, less the device's capacities.
	room int
}

func newAttrs(n, capacities int, vals *values) *attrs {
	return &attrs{m: make(map[resourceapi.QualifiedName]resourceapi.DeviceAttribute, n), vals: vals,
		room: resourceapi.ResourceSliceMaxAttributesAndCapacitiesPerDevice - capacities}
}

func (a *attrs) full() bool {
	return len(a.m) >= a.room
}

func (a *attrs) str(name resourceapi.QualifiedName, v string) {
	switch {
	case v == "":
	case len(v) > resourceapi.DeviceAttributeMaxValueLength:
		a.dropped = append(a.dropped, fmt.Sprintf("%s: value of %d bytes is over the API's %d", name, len(v), resourceapi.DeviceAttributeMaxValueLength))
	case a.full():
		a.dropped = append(a.dropped, fmt.Sprintf("%s: the device has %d attributes already", name, len(a.m)))
	default:
		a.m[name] = resourceapi.DeviceAttribute{StringValue: a.vals.str(v)}
	}
}

func (a *attrs) int(name resourceapi.QualifiedName, v int64) {
	if a.full() {
		a.dropped = append(a.dropped, fmt.Sprintf("%s: the device has %d attributes already", name, len(a.m)))
		return
	}
	a.m[name] = resourceapi.DeviceAttribute{IntValue: a.vals.int(v)}
}

func (a *attrs) bool(name resourceapi.QualifiedName, v bool) {
	if a.full() {
		a.dropped = append(a.dropped, fmt.Sprintf("%s: the device has %d attributes already", name, len(a.m)))
		return
	}
	p := a.vals.no
	if v {
		p = a.vals.yes
	}
	a.m[name] = resourceapi.DeviceAttribute{BoolValue: p}
}

// placement is where a PF sits on the PCIe fabric and what it is to each
// GPU: computed once per PF and shared by its VFs (a VF's path is its PF's).
type placement struct {
	rootPort, pcieSwitch string
	leaf                 string // the leaf switch its port is cabled to (Options.Leaves)
	speedGbps            int64
	// classes are the PF's classes to the GPUs, closest first, then by GPU
	// address: the order they are published in when not all fit.
	classes []gpuClass
}

type gpuClass struct {
	attr  resourceapi.QualifiedName
	class topology.Class
}

// placementOf computes a PF's placement from the model.
func placementOf(t *topology.Topology, nic topology.NIC) (placement, error) {
	p := placement{speedGbps: speed(nic.Ports)}
	chain := bridges(t, nic.PCI)
	if len(chain) > 0 {
		p.rootPort = chain[0]
		p.pcieSwitch = switchAbove(chain)
	}
	for _, g := range t.GPUs {
		c := t.Class(g.PCI, nic.PCI)
		if c == topology.ClassUnknown {
			continue
		}
		name, err := GPUClassAttribute(g.PCI)
		if err != nil {
			return placement{}, fmt.Errorf("NIC %s: %w", nic.PCI, err)
		}
		p.classes = append(p.classes, gpuClass{name, c})
	}
	slices.SortStableFunc(p.classes, func(a, b gpuClass) int { return cmp.Compare(a.class.Rank(), b.class.Rank()) })
	return p, nil
}

// bridges returns the PCI bridges above addr, the root port first; empty
// for a function directly on a host bridge (as in most VMs).
func bridges(t *topology.Topology, addr string) []string {
	var chain []string
	seen := map[string]bool{addr: true}
	for d, ok := t.Device(addr); ok && d.Parent != "" && !seen[d.Parent]; d, ok = t.Device(d.Parent) {
		seen[d.Parent] = true
		chain = append(chain, d.Parent)
	}
	slices.Reverse(chain)
	return chain
}

// switchAbove returns the upstream port of the PCIe switch a function sits
// under, "" when its parent is a root port. Bridges alternate below a root
// port as topology's classes assume: a switch's upstream port at odd depth,
// its downstream ports at even depth.
func switchAbove(chain []string) string {
	d := len(chain) - 1
	switch {
	case d == 0:
		return ""
	case d%2 == 0:
		return chain[d-1]
	default:
		return chain[d]
	}
}

// speed is the rate of the first port in Gb/s, rounded; 0 when unknown.
func speed(ports []topology.Port) int64 {
	if len(ports) == 0 || ports[0].RateGbps <= 0 {
		return 0
	}
	return int64(math.Round(ports[0].RateGbps))
}

// deviceAttributes builds the attributes of one pool device.
func deviceAttributes(t *topology.Topology, d pool.Device, resource string, pl placement, capacities int, vals *values) (map[resourceapi.QualifiedName]resourceapi.DeviceAttribute, []string) {
	a := newAttrs(17+len(pl.classes), capacities, vals)
	a.str(AttrPool, resource)
	if pd, ok := t.Device(d.ID); ok && pd.HostBridge != "" {
		root := pd.HostBridge
		if hb, err := pciaddr.ParseHostBridge(root); err == nil {
			root = hb.String() // sysfs's own spelling, as the library reads it
		}
		a.str(AttrPCIeRoot, root)
	}
	a.str(AttrPCIBusID, d.ID)
	if d.NUMA >= 0 {
		a.int(AttrNUMANode, int64(d.NUMA))
	}
	a.bool(AttrIsVF, d.VFIndex >= 0)
	if d.VFIndex >= 0 {
		a.int(AttrVFIndex, int64(d.VFIndex))
	}
	a.str(AttrPFPCIAddress, d.PF)
	a.str(AttrRDMADevice, d.RDMA)
	a.str(AttrLinkLayer, d.LinkLayer)
	sp := pl.speedGbps
	if vf, _, ok := t.VF(d.ID); ok && speed(vf.Ports) > 0 {
		sp = speed(vf.Ports)
	}
	if sp > 0 {
		a.int(AttrSpeedGbps, sp)
	}
	if d.Rail >= 0 {
		a.int(AttrRail, int64(d.Rail))
	}
	a.str(AttrLeaf, pl.leaf)
	a.str(AttrPCIeRootPort, pl.rootPort)
	a.str(AttrPCIeSwitch, pl.pcieSwitch)
	a.str(AttrVendorID, fmt.Sprintf("%04x", d.Vendor))
	if d.Device != 0 {
		a.str(AttrDeviceID, fmt.Sprintf("%04x", d.Device))
	}
	if len(pl.classes) > 0 {
		a.str(AttrBestGPUClass, pl.classes[0].class.String())
	}
	// Per-GPU classes last, closest first: those that do not fit are the
	// farthest, and the claims that name a GPU want the close ones.
	omitted := 0
	for _, c := range pl.classes {
		if a.full() {
			omitted++
			continue
		}
		a.str(c.attr, c.class.String())
	}
	if omitted > 0 {
		a.dropped = append(a.dropped, fmt.Sprintf("%d of %d GPU classes (the farthest): the device has %d attributes, the API's limit",
			omitted, len(pl.classes), resourceapi.ResourceSliceMaxAttributesAndCapacitiesPerDevice))
	}
	return a.m, a.dropped
}
