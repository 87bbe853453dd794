package jobrails

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/railyard-io/railyard/internal/dra"
	"github.com/railyard-io/railyard/internal/topology"
)

// ErrNoRoom is wrapped by Choose's error when no rail set has room for
// every pod of the job.
var ErrNoRoom = errors.New("no rail set has room for every pod of the job")

// ErrInput is wrapped by the errors of bad arguments.
var ErrInput = errors.New("invalid job")

// Device names one published device (a ResourceClaim's allocation result
// names devices the same way).
type Device struct{ Driver, Pool, Name string }

// Rail is one rail of a node: the NIC devices Railyard's driver publishes
// with that railyard.io/rail, and the GPUs on the same PCIe roots.
type Rail struct {
	Rail int64
	// GPUs is how many GPUs the rail has; FreeGPUs and FreeNICs how many
	// of its GPUs and NIC devices no claim holds.
	GPUs, FreeGPUs, FreeNICs int
	// BusIDs are its GPUs' PCI addresses, sorted.
	BusIDs []string
}

// Node is a node's rails, by rail.
type Node struct {
	Name  string
	Rails map[int64]*Rail
}

// Inventory reads each node's rails from the cluster's ResourceSlices:
// Railyard's NIC devices (driver dra.DriverName: railyard.io/rail, and
// each GPU's distance class, railyard.io/gpu_<address>) and the GPUs of
// gpuDriver (resource.kubernetes.io/pciBusID). A GPU's rail is the rail
// of its nearest NIC (the best class; ties: the lowest rail), as
// topology.NICRails numbers rails; GPUs without a bus ID or without a NIC
// that knows them are on no rail. Devices in allocated are not free.
// Nodes are sorted by name.
func Inventory(rs []*resourceapi.ResourceSlice, gpuDriver string, allocated map[Device]bool) []Node {
	type gpu struct {
		bus  string
		free bool
	}
	type nic struct {
		rail    int64
		classes map[resourceapi.QualifiedName]string
	}
	type nodeDevs struct {
		rails map[int64]*Rail
		nics  []nic
		gpus  []gpu
	}
	byNode := map[string]*nodeDevs{}
	for _, s := range rs {
		if s == nil || s.Spec.NodeName == nil || *s.Spec.NodeName == "" {
			continue
		}
		nd := byNode[*s.Spec.NodeName]
		if nd == nil {
			nd = &nodeDevs{rails: map[int64]*Rail{}}
			byNode[*s.Spec.NodeName] = nd
		}
		for _, d := range s.Spec.Devices {
			free := !allocated[Device{Driver: s.Spec.Driver, Pool: s.Spec.Pool.Name, Name: d.Name}]
			switch s.Spec.Driver {
			case dra.DriverName:
				rail, ok := intAttr(d, dra.AttrRail)
				if !ok || rail < 0 {
					continue
				}
				r := nd.rails[rail]
				if r == nil {
					r = &Rail{Rail: rail}
					nd.rails[rail] = r
				}
				if free {
					r.FreeNICs++
				}
				n := nic{rail: rail, classes: map[resourceapi.QualifiedName]string{}}
				for name, a := range d.Attributes {
					if strings.HasPrefix(string(name), dra.GPUClassPrefix) && a.StringValue != nil {
						n.classes[name] = *a.StringValue
					}
				}
				nd.nics = append(nd.nics, n)
			case gpuDriver:
				nd.gpus = append(nd.gpus, gpu{bus: stringAttr(d, dra.AttrPCIBusID), free: free})
			}
		}
	}
	var out []Node
	for name, nd := range byNode {
		for _, g := range nd.gpus {
			attr, err := dra.GPUClassAttribute(g.bus)
			if err != nil {
				continue
			}
			best, bestRank := int64(-1), 0
			for _, n := range nd.nics {
				c, ok := n.classes[attr]
				if !ok {
					continue
				}
				cl, err := topology.ParseClass(c)
				if err != nil {
					continue
				}
				if rank := cl.Rank(); best < 0 || rank < bestRank || rank == bestRank && n.rail < best {
					best, bestRank = n.rail, rank
				}
			}
			if best < 0 {
				continue
			}
			r := nd.rails[best]
			r.GPUs++
			r.BusIDs = append(r.BusIDs, g.bus)
			if g.free {
				r.FreeGPUs++
			}
		}
		for _, r := range nd.rails {
			slices.Sort(r.BusIDs)
		}
		out = append(out, Node{Name: name, Rails: nd.rails})
	}
	slices.SortFunc(out, func(a, b Node) int { return cmp.Compare(a.Name, b.Name) })
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

// RailGPUs is one rail of a rail set and how many GPUs a pod takes on it
// (every GPU of the rail: a rail is not split between pods), with the
// GPUs' PCI addresses on the nodes that have the rail (the template pins
// each GPU request to them).
type RailGPUs struct {
	Rail   int64
	GPUs   int
	BusIDs []string
}

// Set is a rail set, by rail.
type Set []RailGPUs

// String is "4,6".
func (s Set) String() string {
	parts := make([]string, len(s))
	for i, r := range s {
		parts[i] = strconv.FormatInt(r.Rail, 10)
	}
	return strings.Join(parts, ",")
}

// GPUs is the pod's GPU count on s.
func (s Set) GPUs() int {
	n := 0
	for _, r := range s {
		n += r.GPUs
	}
	return n
}

// fits reports whether a pod on s fits n: every GPU of each rail free and
// a free NIC device for each.
func (s Set) fits(n Node) bool {
	for _, r := range s {
		nr := n.Rails[r.Rail]
		if nr == nil || nr.GPUs != r.GPUs || nr.FreeGPUs < r.GPUs || nr.FreeNICs < r.GPUs {
			return false
		}
	}
	return true
}

// maxRails bounds the subsets Choose tries on one node (2^16).
const maxRails = 16

// Choice is Choose's answer: the rail set and the nodes with room for a
// pod on it.
type Choice struct {
	Set   Set
	Nodes []string
}

// Choose picks the rail set for a job of pods pods of gpus GPUs each: of
// the sets of whole rails that give a pod exactly gpus GPUs on some node,
// the one with room for a pod on the most nodes (ties: the lowest rails).
// A job of one pod still gets a set (any node will do). It fails with
// ErrNoRoom when no set has room on pods nodes (two pods of one job are
// never on one node: they would need the same rails twice).
func Choose(nodes []Node, pods, gpus int) (Choice, error) {
	if pods < 1 || gpus < 1 {
		return Choice{}, fmt.Errorf("%w: %d pods of %d GPUs", ErrInput, pods, gpus)
	}
	cands := map[string]Set{}
	for _, n := range nodes {
		rails := slices.Sorted(maps.Keys(n.Rails))
		if len(rails) > maxRails {
			return Choice{}, fmt.Errorf("%w: node %s has %d rails, more than %d", ErrInput, n.Name, len(rails), maxRails)
		}
		for mask := 1; mask < 1<<len(rails); mask++ {
			var sub []int64
			for i, r := range rails {
				if mask&(1<<i) != 0 && n.Rails[r].GPUs > 0 {
					sub = append(sub, r)
				}
			}
			s := setOn(n, sub)
			if len(s) == 0 || s.GPUs() != gpus {
				continue
			}
			if c, ok := cands[s.String()]; ok {
				s = c.withBusIDs(s)
			}
			cands[s.String()] = s
		}
	}
	if len(cands) == 0 {
		return Choice{}, fmt.Errorf("%w: no node has whole rails of exactly %d GPUs", ErrNoRoom, gpus)
	}
	var best Choice
	for _, s := range cands {
		room := s.room(nodes)
		if len(room) > len(best.Nodes) || len(room) == len(best.Nodes) && (best.Set == nil || lower(s, best.Set)) {
			best = Choice{Set: s, Nodes: room}
		}
	}
	if len(best.Nodes) < pods {
		return best, fmt.Errorf("%w: %d pods of %d GPUs; the best rail set, %s, has room on %d nodes", ErrNoRoom, pods, gpus, best.Set, len(best.Nodes))
	}
	return best, nil
}

// ChooseSet is Choose restricted to the rail set rails (sorted): an error
// when no node has exactly those whole rails for gpus GPUs, ErrNoRoom when
// fewer than pods nodes have room on it.
func ChooseSet(nodes []Node, pods, gpus int, rails []int64) (Choice, error) {
	if pods < 1 || gpus < 1 || len(rails) == 0 {
		return Choice{}, fmt.Errorf("%w: %d pods of %d GPUs on rails %v", ErrInput, pods, gpus, rails)
	}
	var set Set
	for _, n := range nodes {
		s := setOn(n, rails)
		if s == nil || s.GPUs() != gpus {
			continue
		}
		if set == nil {
			set = s
		} else {
			set = set.withBusIDs(s)
		}
	}
	if set == nil {
		return Choice{}, fmt.Errorf("%w: no node has rails %v giving a pod exactly %d GPUs", ErrInput, rails, gpus)
	}
	c := Choice{Set: set, Nodes: set.room(nodes)}
	if len(c.Nodes) < pods {
		return c, fmt.Errorf("%w: rails %s have room for a pod on %d nodes, the job has %d pods", ErrNoRoom, set, len(c.Nodes), pods)
	}
	return c, nil
}

// setOn is the rail set rails on node n, each rail with all its GPUs and
// their addresses (a copy); nil when n lacks one of the rails or one has
// no GPU.
func setOn(n Node, rails []int64) Set {
	s := make(Set, 0, len(rails))
	for _, r := range rails {
		nr := n.Rails[r]
		if nr == nil || nr.GPUs == 0 {
			return nil
		}
		s = append(s, RailGPUs{Rail: r, GPUs: nr.GPUs, BusIDs: slices.Clone(nr.BusIDs)})
	}
	return s
}

// withBusIDs adds to s the GPU addresses of o, the same rails on another
// node (a heterogeneous cluster's template takes any of them).
func (s Set) withBusIDs(o Set) Set {
	for i := range s {
		s[i].BusIDs = slices.Compact(slices.Sorted(slices.Values(append(s[i].BusIDs, o[i].BusIDs...))))
	}
	return s
}

// room lists the nodes with room for a pod on s, in the nodes' order.
func (s Set) room(nodes []Node) []string {
	var out []string
	for _, n := range nodes {
		if s.fits(n) {
			out = append(out, n.Name)
		}
	}
	return out
}

func lower(a, b Set) bool {
	return slices.CompareFunc(a, b, func(x, y RailGPUs) int { return cmp.Compare(x.Rail, y.Rail) }) < 0
}

// Options are the classes a template's requests name.
type Options struct {
	// GPUClass is the DeviceClass of the GPUs (default "gpu.nvidia.com",
	// the NVIDIA DRA driver's).
	GPUClass string
	// NICClass is the DeviceClass of the NICs (default dra.DeviceClassName).
	NICClass string
}

// DefaultGPUClass is the NVIDIA DRA driver's GPU DeviceClass.
const DefaultGPUClass = "gpu.nvidia.com"

// Labels and annotations on the template.
const (
	LabelJob        = "railyard.io/job"
	AnnotationRails = "railyard.io/rails"
)

// ClaimTemplate is the job's ResourceClaimTemplate for rail set s: per GPU
// i a request gpu<i> whose selector takes one of its rail's GPUs (by
// resource.kubernetes.io/pciBusID) and a request nic<i> whose selector
// pins the rail (railyard.io/rail), with a matchAttribute constraint on
// pcieRoot between them (several rails can share a root: the selectors
// decide the rail, the constraint keeps the pair on one root). The GPU
// requests come first: the allocator then tries GPUs before NICs, and a
// node short of GPUs fails fast (docs/dra.md).
func ClaimTemplate(name, namespace string, s Set, o Options) (*resourceapi.ResourceClaimTemplate, error) {
	if len(s) == 0 {
		return nil, fmt.Errorf("%w: empty rail set", ErrInput)
	}
	o.GPUClass = cmp.Or(o.GPUClass, DefaultGPUClass)
	o.NICClass = cmp.Or(o.NICClass, dra.DeviceClassName)
	var gpus, nics []resourceapi.DeviceRequest
	var cons []resourceapi.DeviceConstraint
	root := resourceapi.FullyQualifiedName(dra.AttrPCIeRoot)
	for _, r := range s {
		if len(r.BusIDs) == 0 {
			return nil, fmt.Errorf("%w: rail %d has no GPU addresses", ErrInput, r.Rail)
		}
		quoted := make([]string, len(r.BusIDs))
		for i, b := range r.BusIDs {
			quoted[i] = strconv.Quote(b)
		}
		// Each selector first asks whether the device has the attribute: CEL
		// fails on a missing key, and the allocator then fails the whole
		// claim on the node (a storage NIC with no rail, a GPU published
		// without pciBusID) instead of passing over that device.
		onRail := fmt.Sprintf(`"pciBusID" in device.attributes[%q] && device.attributes[%q].pciBusID in [%s]`,
			"resource.kubernetes.io", "resource.kubernetes.io", strings.Join(quoted, ", "))
		for range r.GPUs {
			i := strconv.Itoa(len(gpus))
			gpus = append(gpus, one("gpu"+i, o.GPUClass, onRail))
			nics = append(nics, one("nic"+i, o.NICClass,
				fmt.Sprintf(`"rail" in device.attributes[%q] && device.attributes[%q].rail == %d`, dra.Domain, dra.Domain, r.Rail)))
			cons = append(cons, resourceapi.DeviceConstraint{Requests: []string{"gpu" + i, "nic" + i}, MatchAttribute: &root})
		}
	}
	if len(cons) > resourceapi.DeviceConstraintsMaxSize {
		return nil, fmt.Errorf("%w: %d GPUs need %d constraints; a claim holds %d", ErrInput, len(cons), len(cons), resourceapi.DeviceConstraintsMaxSize)
	}
	return &resourceapi.ResourceClaimTemplate{
		TypeMeta: metav1.TypeMeta{APIVersion: resourceapi.SchemeGroupVersion.String(), Kind: "ResourceClaimTemplate"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace,
			Labels:      map[string]string{LabelJob: name},
			Annotations: map[string]string{AnnotationRails: s.String()}},
		Spec: resourceapi.ResourceClaimTemplateSpec{Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{
			Requests: append(gpus, nics...), Constraints: cons,
		}}},
	}, nil
}

func one(name, class, cel string) resourceapi.DeviceRequest {
	r := resourceapi.DeviceRequest{Name: name, Exactly: &resourceapi.ExactDeviceRequest{
		DeviceClassName: class, AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 1,
	}}
	if cel != "" {
		r.Exactly.Selectors = []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: cel}}}
	}
	return r
}
