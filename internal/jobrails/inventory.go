package jobrails

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	resourceapi "k8s.io/api/resource/v1"

	"github.com/railyard-io/railyard/internal/dra"
	"github.com/railyard-io/railyard/internal/pciaddr"
	"github.com/railyard-io/railyard/internal/topology"
)

// Device names one published device (a ResourceClaim's allocation result
// names devices the same way).
type Device struct{ Driver, Pool, Name string }

// Cluster is what Inventory reads: the cluster's ResourceSlices, its
// ResourceClaims (their allocations hold devices) and its DeviceTaintRules
// (taints the scheduler adds to the devices they select).
type Cluster struct {
	Slices     []*resourceapi.ResourceSlice
	Claims     []*resourceapi.ResourceClaim
	TaintRules []*resourceapi.DeviceTaintRule
}

// InventoryOptions are what the job's template asks beyond its classes.
type InventoryOptions struct {
	// GPUDriver is the DRA driver of the GPUs' slices (default
	// DefaultGPUClass, NVIDIA's driver name).
	GPUDriver string
	// Tolerations are the device tolerations every request of the
	// template carries (Options.Tolerations): a device with a NoSchedule
	// or NoExecute taint none of them tolerates is not free.
	Tolerations []resourceapi.DeviceToleration
}

// Rail is one rail of a node: the NIC devices Railyard's driver publishes
// with that railyard.io/rail, and the GPUs nearest to them.
type Rail struct {
	Rail int64
	// GPUs is how many GPUs the rail has; FreeGPUs how many of them the
	// job can take now; FreeNICs how many NIC requests its devices take
	// now (a shared NIC counts once per default share it has left).
	GPUs, FreeGPUs, FreeNICs int
	// BusIDs are its GPUs' PCI addresses, sorted.
	BusIDs []string
	// PF is the PCI address of the rail's NIC (its PF): NIC order, in
	// which NVIDIA's operators number rails, sorts rails by it.
	PF string
	// Tainted lists the rail's devices whose taints the job does not
	// tolerate, as "<device> key=value:Effect".
	Tainted []string
}

// GPU is one GPU of a node.
type GPU struct {
	BusID string
	// Root is its resource.kubernetes.io/pcieRoot ("" unpublished).
	Root string
	// Rail is the rail of its nearest NIC, -1 for none.
	Rail int64
	// Free: no claim holds it, no untolerated taint, its pool complete.
	Free bool
}

// NIC is one device of Railyard's driver with a rail (a PF, a VF or a
// shared NIC).
type NIC struct {
	Device
	Rail     int64
	Root, PF string
	// Slots is how many more NIC requests of the template it takes: 0 or
	// 1, or for a shared NIC (allowMultipleAllocations) the default
	// requests its capacity has left.
	Slots int
}

// Node is a node's rails, by rail, and the devices they are made of.
type Node struct {
	Name  string
	Rails map[int64]*Rail
	// GPUs are the node's GPUs, by PCI address; NICs Railyard's devices
	// with a rail, in slice order.
	GPUs []GPU
	NICs []NIC
	// Notes say why devices of the node are not free beyond claims and
	// taints (a pool whose current generation is incomplete).
	Notes []string
}

// unlimited stands for the slots of a shared device with no capacity.
const unlimited = 1 << 20

// Inventory reads each node's rails from the cluster as kube-scheduler's
// DRA allocator sees them: Railyard's NIC devices (driver dra.DriverName:
// railyard.io/rail, and each GPU's distance class, railyard.io/gpu_<addr>)
// and the GPUs of the GPU driver (resource.kubernetes.io/pciBusID; devices
// whose "type" is not "gpu", such as MIG slices, are no GPUs). A GPU's
// rail is the rail of its nearest NIC (the best class; ties: the lowest
// rail), as topology.NICRails numbers rails; GPUs without a bus ID or
// without a NIC that knows them are on no rail.
//
// Only the highest spec.pool.generation of each pool counts, and a pool
// of which fewer than resourceSliceCount slices of that generation exist
// is incomplete: its devices are not free (the allocator takes nothing
// from it). A device is not free either when an allocated claim holds it
// (results with adminAccess hold nothing; a shared device's results hold
// their consumed capacity), or when it carries a NoSchedule or NoExecute
// taint (its own, or a DeviceTaintRule's) that no toleration in o
// tolerates. Nodes are sorted by name.
func Inventory(c Cluster, o InventoryOptions) []Node {
	gpuDriver := cmp.Or(o.GPUDriver, DefaultGPUClass)
	pools := currentPools(c.Slices)
	use := usageOf(c.Claims)
	byNode := map[string]*Node{}
	classes := map[string]map[int]map[resourceapi.QualifiedName]string{} // node -> NIC index -> GPU classes
	for _, s := range c.Slices {
		if s == nil || s.Spec.NodeName == nil || *s.Spec.NodeName == "" || (s.Spec.Driver != dra.DriverName && s.Spec.Driver != gpuDriver) {
			continue
		}
		p := pools[poolKey{s.Spec.Driver, s.Spec.Pool.Name}]
		if s.Spec.Pool.Generation != p.generation {
			continue // an older generation, being replaced
		}
		name := *s.Spec.NodeName
		n := byNode[name]
		if n == nil {
			n = &Node{Name: name, Rails: map[int64]*Rail{}}
			byNode[name] = n
			classes[name] = map[int]map[resourceapi.QualifiedName]string{}
		}
		if p.note != "" && !slices.Contains(n.Notes, p.note) {
			n.Notes = append(n.Notes, p.note)
		}
		for _, d := range s.Spec.Devices {
			id := Device{Driver: s.Spec.Driver, Pool: s.Spec.Pool.Name, Name: d.Name}
			taints := untolerated(append(slices.Clone(d.Taints), ruleTaints(c.TaintRules, id)...), o.Tolerations)
			free := 0
			if p.note == "" && len(taints) == 0 {
				free = use.slots(id, d)
			}
			switch s.Spec.Driver {
			case dra.DriverName:
				rail, ok := intAttr(d, dra.AttrRail)
				if !ok || rail < 0 {
					continue
				}
				r := n.rail(rail)
				r.FreeNICs = min(r.FreeNICs+free, unlimited)
				pf := stringAttr(d, dra.AttrPFPCIAddress)
				if r.PF == "" || pf != "" && pciaddr.CompareStrings(pf, r.PF) < 0 {
					r.PF = pf
				}
				for _, t := range taints {
					r.Tainted = append(r.Tainted, d.Name+" "+taintString(t))
				}
				cl := map[resourceapi.QualifiedName]string{}
				for k, a := range d.Attributes {
					if strings.HasPrefix(string(k), dra.GPUClassPrefix) && a.StringValue != nil {
						cl[k] = *a.StringValue
					}
				}
				classes[name][len(n.NICs)] = cl
				n.NICs = append(n.NICs, NIC{Device: id, Rail: rail, Root: stringAttr(d, dra.AttrPCIeRoot), PF: pf, Slots: free})
			case gpuDriver:
				if t := stringAttr(d, "type"); t != "" && t != "gpu" {
					continue
				}
				bus := stringAttr(d, dra.AttrPCIBusID)
				if bus == "" {
					continue
				}
				n.GPUs = append(n.GPUs, GPU{BusID: bus, Root: stringAttr(d, dra.AttrPCIeRoot), Rail: -1, Free: free > 0})
			}
		}
	}
	out := make([]Node, 0, len(byNode))
	for _, name := range slices.Sorted(maps.Keys(byNode)) {
		n := byNode[name]
		n.railGPUs(classes[name])
		out = append(out, *n)
	}
	return out
}

func (n *Node) rail(r int64) *Rail {
	if n.Rails[r] == nil {
		n.Rails[r] = &Rail{Rail: r}
	}
	return n.Rails[r]
}

// railGPUs puts each GPU on the rail of its nearest NIC and counts the
// rails' GPUs.
func (n *Node) railGPUs(classes map[int]map[resourceapi.QualifiedName]string) {
	pciaddr.SortByAddress(n.GPUs, func(g GPU) string { return g.BusID })
	for i := range n.GPUs {
		g := &n.GPUs[i]
		attr, err := dra.GPUClassAttribute(g.BusID)
		if err != nil {
			continue
		}
		bestRank := 0
		for j, nic := range n.NICs {
			cl, err := topology.ParseClass(classes[j][attr])
			if err != nil {
				continue
			}
			if rank := cl.Rank(); g.Rail < 0 || rank < bestRank || rank == bestRank && nic.Rail < g.Rail {
				g.Rail, bestRank = nic.Rail, rank
			}
		}
		if g.Rail < 0 {
			continue
		}
		r := n.Rails[g.Rail]
		r.GPUs++
		r.BusIDs = append(r.BusIDs, g.BusID)
		if g.Free {
			r.FreeGPUs++
		}
	}
	for _, r := range n.Rails {
		slices.Sort(r.BusIDs)
	}
}

type poolKey struct{ driver, pool string }

// pool is what the allocator knows of a pool: its current generation,
// and why its devices cannot be allocated ("" when they can).
type pool struct {
	generation int64
	note       string
}

// currentPools finds each pool's highest generation and whether all its
// slices of that generation are there (every slice counts, whatever node
// it names, as the allocator's completeness check does).
func currentPools(rs []*resourceapi.ResourceSlice) map[poolKey]pool {
	type acc struct {
		gen, want int64
		have      int
		set       bool
	}
	seen := map[poolKey]*acc{}
	var order []poolKey
	for _, s := range rs {
		if s == nil {
			continue
		}
		k := poolKey{s.Spec.Driver, s.Spec.Pool.Name}
		a := seen[k]
		if a == nil {
			a = &acc{}
			seen[k] = a
			order = append(order, k)
		}
		switch g := s.Spec.Pool.Generation; {
		case !a.set || g > a.gen:
			*a = acc{gen: g, want: s.Spec.Pool.ResourceSliceCount, have: 1, set: true}
		case g == a.gen:
			a.have++
		}
	}
	out := make(map[poolKey]pool, len(seen))
	for _, k := range order {
		a := seen[k]
		p := pool{generation: a.gen}
		if int64(a.have) != a.want {
			p.note = fmt.Sprintf("pool %s/%s: %d of %d slices of generation %d published: the scheduler allocates none of its devices until the pool is complete", k.driver, k.pool, a.have, a.want, a.gen)
		}
		out[k] = p
	}
	return out
}

func stringAttr(d resourceapi.Device, name resourceapi.QualifiedName) string {
	if a, ok := d.Attributes[name]; ok && a.StringValue != nil {
		return *a.StringValue
	}
	return ""
}

func intAttr(d resourceapi.Device, name resourceapi.QualifiedName) (int64, bool) {
	if a, ok := d.Attributes[name]; ok && a.IntValue != nil {
		return *a.IntValue, true
	}
	return 0, false
}
