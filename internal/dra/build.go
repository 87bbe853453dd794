package dra

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/dynamic-resource-allocation/resourceslice"

	"github.com/railyard-io/railyard/api/config/v1alpha1"
	"github.com/railyard-io/railyard/internal/pciaddr"
	"github.com/railyard-io/railyard/internal/pool"
	"github.com/railyard-io/railyard/internal/topology"
)

// CapacityShares is the capacity of a shared pool's NIC (KEP-5075
// consumable capacity): the pool's sharedLimit. A claim consumes one share
// unless its request asks for more (capacity.requests), at most all of
// them; the scheduler allocates the NIC to claims while shares are left.
const CapacityShares = resourceapi.QualifiedName(Domain + "/shares")

// NoConsumableCapacity is why a shared pool's NICs are left out where the
// API server drops consumable capacity: published without
// allowMultipleAllocations, a NIC would go to one claim only.
const NoConsumableCapacity = "a shared NIC needs consumable capacity, which the API server drops (DRAConsumableCapacity off, as in Kubernetes 1.35)"

// Pool is the DRA pool of one Railyard pool on one node.
type Pool struct {
	// Name is the DRA pool name, "<node>/<pool>" (PoolName).
	Name string
	// Resource is the Railyard pool it comes from ("railyard.io/rdma_vf").
	Resource string
	// Kind is the pool's device kind, v1alpha1.KindVF, KindPF or
	// KindShared (one device per NIC, allocated to up to Shares claims).
	Kind string
	// Shares is the shares of each NIC of a shared pool (its
	// sharedLimit), 0 for other kinds.
	Shares int
	// Devices are the published devices: healthy, in PCI address order
	// (the order the scheduler's first-fit allocator tries them in).
	Devices []resourceapi.Device
	// Unpublished are the pool's devices left out and why: unhealthy
	// (without Options.TaintUnhealthy), or already published by an earlier
	// pool.
	Unpublished []Unpublished
	// Tainted are the unhealthy devices published with a taint
	// (Options.TaintUnhealthy) and why they are unhealthy.
	Tainted []Unpublished
	// Warnings are attributes left out of published devices (a value over
	// the API's length limit, GPU classes beyond the attribute limit).
	Warnings []string
	// Held are the devices published as Options.Prepared gave them: a
	// prepared claim holds them and their RDMA device is out of the
	// host's view.
	Held []string
	// Health is every device of the pool (published, tainted, held or
	// left out as unhealthy; not those of an earlier pool) and its health,
	// in PCI address order: what the kubelet plugin reports to kubelet
	// for pod status (KEP-4680).
	Health []DeviceHealth
}

// DeviceHealth is one device's health as Build judged it.
type DeviceHealth struct {
	// Device is the DRA device name (DeviceName of PCI).
	Device string
	PCI    string
	// Healthy is false for a device left out or tainted as unhealthy.
	Healthy bool
	// Reason says why not (the pool's reason), or, for a held device,
	// that its RDMA device is in a pod.
	Reason string
}

// TaintKey is the key of the taint an unhealthy device is published with
// under Options.TaintUnhealthy (KEP-5055 device taints). Its value is the
// reason made a label value ("port-1-is-down-disabled").
const TaintKey = "rdma.railyard.io/unhealthy"

// Options are what the caller knows beyond the topology.
type Options struct {
	// Prepared are the devices that prepared claims hold, by PCI address,
	// with what was last published for each. While a claim holds a device
	// its RDMA device may live in the pod's network namespace, where the
	// host's sysfs no longer shows it: such a device stays published as it
	// was (a VF only while its PF's link is up), so its name and
	// attributes do not change under the claim.
	Prepared map[string]resourceapi.Device
	// Leaves are the leaf switches the node's NIC ports are cabled to, by
	// topology.NIC.Name (the NIC of a fabric.Port, from the node's
	// railyard.io/fabric-ports annotation), spelled as the node's
	// rail.railyard.io/<rail> label spells them. A PF and its VFs get their
	// PF's leaf as AttrLeaf; a NIC not in the map gets none.
	Leaves map[string]string
	// TaintUnhealthy publishes an unhealthy device with a NoSchedule taint
	// (TaintKey) instead of leaving it out: the scheduler allocates it to
	// no new claim, a claim that holds it still finds it, and an admin sees
	// why in the slice. Only where the API server keeps device taints
	// (DRADeviceTaints: GA in Kubernetes 1.37, off before); elsewhere it
	// would publish the device untainted, so the kubelet plugin turns it on
	// only after probing the server (draplugin).
	TaintUnhealthy bool
	// ConsumableCapacity publishes a shared pool's NICs, each allocatable
	// to many claims (allowMultipleAllocations) while its CapacityShares
	// last. Only where the API server keeps them (DRAConsumableCapacity:
	// beta and on in Kubernetes 1.37, alpha and off in 1.35); elsewhere a
	// shared pool's NICs are left out (NoConsumableCapacity).
	ConsumableCapacity bool
}

// Unpublished is a device of a pool that is not published.
type Unpublished struct {
	PCI    string
	Reason string
}

// Build computes the DRA pools of a node: one per Railyard pool, in the
// order of pools. A device that matches several pools is published in the
// first only (the scheduler would otherwise hand it out twice). Devices
// share attribute values (pointers) with each other: treat the result as
// read-only, like the topology.
func Build(node string, t *topology.Topology, pools []v1alpha1.Pool, opts Options) ([]Pool, error) {
	if t == nil {
		return nil, errors.New("dra: no topology")
	}
	out := make([]Pool, 0, len(pools))
	owner := map[string]string{} // PCI address -> the DRA pool publishing it
	names := map[string]string{}
	vals := newValues()
	for _, p := range pools {
		dp, err := buildPool(node, t, p, owner, vals, opts)
		if err != nil {
			return nil, err
		}
		if prev, dup := names[dp.Name]; dup {
			return nil, fmt.Errorf("%w: pools %s and %s both become DRA pool %s", ErrName, prev, p.Name, dp.Name)
		}
		names[dp.Name] = p.Name
		out = append(out, dp)
	}
	return out, nil
}

func buildPool(node string, t *topology.Topology, p v1alpha1.Pool, owner map[string]string, vals *values, opts Options) (Pool, error) {
	name, err := PoolName(node, p.Name)
	if err != nil {
		return Pool{}, err
	}
	sel, err := pool.Compile(p)
	if err != nil {
		return Pool{}, fmt.Errorf("pool %s: %w", p.Name, err)
	}
	kind := p.DeviceKind
	if kind == "" {
		kind = v1alpha1.KindVF
	}
	devs := sel.Select(t)
	out := Pool{Name: name, Resource: p.Name, Kind: kind}
	var capacity map[resourceapi.QualifiedName]resourceapi.DeviceCapacity
	if kind == v1alpha1.KindShared {
		devs, out.Shares = nicsOf(devs), sel.Shares()
		if !opts.ConsumableCapacity {
			for _, d := range devs {
				out.Unpublished = append(out.Unpublished, Unpublished{d.ID, NoConsumableCapacity})
			}
			return out, nil
		}
		capacity = sharesCapacity(out.Shares)
	}
	pciaddr.SortByAddress(devs, func(d pool.Device) string { return d.ID })
	out.Devices = make([]resourceapi.Device, 0, len(devs))
	placements := map[string]placement{}
	for _, d := range devs {
		if prev, taken := owner[d.ID]; taken {
			out.Unpublished = append(out.Unpublished, Unpublished{d.ID, "already published in DRA pool " + prev})
			continue
		}
		devName, err := DeviceName(d.ID)
		if err != nil {
			return Pool{}, fmt.Errorf("pool %s: %w", p.Name, err)
		}
		var taints []resourceapi.DeviceTaint
		if !d.Healthy {
			// A shared NIC stays in the host's namespace (the RDMA
			// subsystem in shared mode): unhealthy is unhealthy.
			if held, ok := opts.Prepared[d.ID]; ok && held.Name == devName && capacity == nil && outOfView(t, d) {
				owner[d.ID] = name
				out.Held = append(out.Held, d.ID)
				out.Devices = append(out.Devices, held)
				out.Health = append(out.Health, DeviceHealth{devName, d.ID, true, "held by a prepared claim: its RDMA device is in the pod's namespace, its PF's link is up"})
				continue
			}
			out.Health = append(out.Health, DeviceHealth{devName, d.ID, false, d.Reason})
			if !opts.TaintUnhealthy {
				out.Unpublished = append(out.Unpublished, Unpublished{d.ID, d.Reason})
				continue
			}
			taints = []resourceapi.DeviceTaint{{Key: TaintKey, Value: taintValue(d.Reason), Effect: resourceapi.DeviceTaintEffectNoSchedule}}
			out.Tainted = append(out.Tainted, Unpublished{d.ID, d.Reason})
		} else {
			out.Health = append(out.Health, DeviceHealth{Device: devName, PCI: d.ID, Healthy: true})
		}
		pl, ok := placements[d.PF]
		if !ok {
			nic, found := t.NIC(d.PF)
			if !found {
				return Pool{}, fmt.Errorf("pool %s: device %s: PF %s is not in the topology", p.Name, d.ID, d.PF)
			}
			if pl, err = placementOf(t, nic); err != nil {
				return Pool{}, fmt.Errorf("pool %s: %w", p.Name, err)
			}
			pl.leaf = opts.Leaves[nic.Name()]
			placements[d.PF] = pl
		}
		attrs, dropped := deviceAttributes(t, d, p.Name, pl, len(capacity), vals)
		for _, w := range dropped {
			out.Warnings = append(out.Warnings, devName+": "+w)
		}
		owner[d.ID] = name
		dev := resourceapi.Device{Name: devName, Attributes: attrs, Taints: taints}
		if capacity != nil {
			dev.AllowMultipleAllocations, dev.Capacity = vals.yes, capacity
		}
		out.Devices = append(out.Devices, dev)
	}
	addGone(t, p.Name, owner, name, &out, opts)
	return out, nil
}

// GoneReason is the health reason of a device a prepared claim holds whose
// PCI function is no longer on the node (the NIC removed, its driver
// unbound, the VF destroyed): the pod holding it cannot work.
const GoneReason = "gone: its PCI function is no longer on the node"

// addGone publishes, under TaintUnhealthy, every device of the pool that a
// prepared claim holds but the topology no longer has (GoneReason) as it
// was published, with a NoExecute taint: the device taint eviction
// controller evicts the pods holding it (unless they tolerate it), the
// scheduler gives it to no new claim, and once no claim holds it the
// device goes from the slices. Without TaintUnhealthy it is left out, as
// before. Gone devices come after the pool's others, in PCI order.
func addGone(t *topology.Topology, resource string, owner map[string]string, name string, out *Pool, opts Options) {
	var gone []string
	for pci, held := range opts.Prepared {
		if a, ok := held.Attributes[AttrPool]; !ok || a.StringValue == nil || *a.StringValue != resource {
			continue
		}
		if _, taken := owner[pci]; taken {
			continue
		}
		if t.Listed(pci) {
			continue // still on the node (if unreadable): published, or not, as the pool decides
		}
		gone = append(gone, pci)
	}
	pciaddr.SortByAddress(gone, func(pci string) string { return pci })
	for _, pci := range gone {
		held := opts.Prepared[pci]
		out.Health = append(out.Health, DeviceHealth{held.Name, pci, false, GoneReason})
		if !opts.TaintUnhealthy {
			out.Unpublished = append(out.Unpublished, Unpublished{pci, GoneReason})
			continue
		}
		owner[pci] = name
		held.Taints = []resourceapi.DeviceTaint{{Key: TaintKey, Value: "gone", Effect: resourceapi.DeviceTaintEffectNoExecute}}
		out.Devices = append(out.Devices, held)
		out.Tainted = append(out.Tainted, Unpublished{pci, GoneReason})
	}
}

// nicsOf turns a shared pool's shares into its NICs: DRA publishes a
// shared NIC once, as the device, and counts its shares as capacity.
func nicsOf(shares []pool.Device) []pool.Device {
	var out []pool.Device
	for _, d := range shares {
		if d.Share == 0 {
			d.ID, d.Share = d.PF, -1
			out = append(out, d)
		}
	}
	return out
}

// sharesCapacity is a shared NIC's capacity (one map for every NIC of the
// pool: read-only, like the attributes): n shares, one per claim by
// default, 1 to n per request.
func sharesCapacity(n int) map[resourceapi.QualifiedName]resourceapi.DeviceCapacity {
	one, all := resource.NewQuantity(1, resource.DecimalSI), resource.NewQuantity(int64(n), resource.DecimalSI)
	step := one.DeepCopy()
	return map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{CapacityShares: {
		Value: *all,
		RequestPolicy: &resourceapi.CapacityRequestPolicy{
			Default:    one,
			ValidRange: &resourceapi.CapacityRequestPolicyRange{Min: one, Max: all, Step: &step},
		},
	}}
}

// taintValue makes a reason a taint value (a label value: at most 63 of
// [a-z0-9._-], starting and ending alphanumeric): "port 1 is DOWN/Disabled"
// becomes "port-1-is-down-disabled".
func taintValue(reason string) string {
	b := make([]byte, 0, 63)
	dash := false
	for _, r := range strings.ToLower(reason) {
		switch {
		case r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
			if dash && len(b) > 0 {
				b = append(b, '-')
			}
			dash = false
			b = append(b, byte(r))
		default:
			dash = true
		}
		if len(b) >= 63 {
			break
		}
	}
	return strings.TrimRight(string(b[:min(len(b), 63)]), "-")
}

// outOfView reports whether an unhealthy device is so only because the
// host no longer sees its RDMA device (moved into a pod's namespace): no
// RDMA or verbs device, and for a VF a PF whose link is up.
func outOfView(t *topology.Topology, d pool.Device) bool {
	if d.RDMACapable() {
		return false // the host sees it, and it is unhealthy
	}
	if d.VFIndex < 0 {
		return true // a whole PF in a pod: its ports went with it
	}
	nic, ok := t.NIC(d.PF)
	if !ok {
		return false
	}
	up, _ := nic.Health()
	return up
}

// Slices splits the pool's devices into slices of at most
// resourceapi.ResourceSliceMaxDevices, in order; at most
// ResourceSliceMaxDevicesWithAdvancedFeatures while a device is tainted
// (the API's limit for a slice with taints). An empty pool has one empty
// slice: "no devices" differs from "no driver".
func (p Pool) Slices() [][]resourceapi.Device {
	if len(p.Tainted) > 0 {
		return chunk(p.Devices, resourceapi.ResourceSliceMaxDevicesWithAdvancedFeatures)
	}
	return chunk(p.Devices, resourceapi.ResourceSliceMaxDevices)
}

func chunk(devs []resourceapi.Device, n int) [][]resourceapi.Device {
	if len(devs) == 0 {
		return [][]resourceapi.Device{{}}
	}
	out := make([][]resourceapi.Device, 0, (len(devs)+n-1)/n)
	for len(devs) > n {
		out = append(out, devs[:n:n])
		devs = devs[n:]
	}
	return append(out, devs)
}

// DriverResources is what the kubelet plugin hands the library's
// ResourceSlice controller (kubeletplugin.Helper.PublishResources): one
// entry per pool, its slices split. Generations are left to the
// controller.
func DriverResources(pools []Pool) resourceslice.DriverResources {
	out := resourceslice.DriverResources{Pools: make(map[string]resourceslice.Pool, len(pools))}
	for _, p := range pools {
		var slices []resourceslice.Slice
		for _, s := range p.Slices() {
			slices = append(slices, resourceslice.Slice{Devices: s})
		}
		out.Pools[p.Name] = resourceslice.Pool{Slices: slices}
	}
	return out
}

// ResourceSlices renders the pools as the ResourceSlice objects the
// controller would create for node (names made up, "<node>-<pool>-<k>"),
// for tests and simulations that feed the scheduler's allocator without an
// API server.
func ResourceSlices(node string, pools []Pool, generation int64) []*resourceapi.ResourceSlice {
	var out []*resourceapi.ResourceSlice
	for _, p := range pools {
		chunks := p.Slices()
		base := strings.NewReplacer("/", "-", ".", "-").Replace(p.Name)
		for k, devs := range chunks {
			out = append(out, &resourceapi.ResourceSlice{
				ObjectMeta: metav1.ObjectMeta{Name: base + "-" + strconv.Itoa(k)},
				Spec: resourceapi.ResourceSliceSpec{
					Driver:   DriverName,
					Pool:     resourceapi.ResourcePool{Name: p.Name, Generation: generation, ResourceSliceCount: int64(len(chunks))},
					NodeName: &node,
					Devices:  devs,
				},
			})
		}
	}
	return out
}
