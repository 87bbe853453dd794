package dra

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/dynamic-resource-allocation/resourceslice"

	"github.com/railyard-io/railyard/api/config/v1alpha1"
	"github.com/railyard-io/railyard/internal/pciaddr"
	"github.com/railyard-io/railyard/internal/pool"
	"github.com/railyard-io/railyard/internal/topology"
)

// ErrUnsupportedKind is returned for a pool whose deviceKind DRA cannot
// publish yet: "shared" (one NIC for many claims needs consumable
// capacity, alpha in Kubernetes 1.34/1.35).
var ErrUnsupportedKind = errors.New("device kind not supported by DRA")

// Pool is the DRA pool of one Railyard pool on one node.
type Pool struct {
	// Name is the DRA pool name, "<node>/<pool>" (PoolName).
	Name string
	// Resource is the Railyard pool it comes from ("railyard.io/rdma_vf").
	Resource string
	// Kind is the pool's device kind, v1alpha1.KindVF or KindPF.
	Kind string
	// Devices are the published devices: healthy, in PCI address order
	// (the order the scheduler's first-fit allocator tries them in).
	Devices []resourceapi.Device
	// Unpublished are the pool's devices left out and why: unhealthy, or
	// already published by an earlier pool.
	Unpublished []Unpublished
	// Warnings are attributes left out of published devices (a value over
	// the API's length limit, GPU classes beyond the attribute limit).
	Warnings []string
	// Held are the devices published as Options.Prepared gave them: a
	// prepared claim holds them and their RDMA device is out of the
	// host's view.
	Held []string
}

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
	if kind != v1alpha1.KindVF && kind != v1alpha1.KindPF {
		return Pool{}, fmt.Errorf("pool %s: %w: %q", p.Name, ErrUnsupportedKind, kind)
	}
	devs := sel.Select(t)
	pciaddr.SortByAddress(devs, func(d pool.Device) string { return d.ID })
	out := Pool{Name: name, Resource: p.Name, Kind: kind, Devices: make([]resourceapi.Device, 0, len(devs))}
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
		if !d.Healthy {
			if held, ok := opts.Prepared[d.ID]; ok && held.Name == devName && outOfView(t, d) {
				owner[d.ID] = name
				out.Held = append(out.Held, d.ID)
				out.Devices = append(out.Devices, held)
				continue
			}
			out.Unpublished = append(out.Unpublished, Unpublished{d.ID, d.Reason})
			continue
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
		attrs, dropped := deviceAttributes(t, d, pl, vals)
		for _, w := range dropped {
			out.Warnings = append(out.Warnings, devName+": "+w)
		}
		owner[d.ID] = name
		out.Devices = append(out.Devices, resourceapi.Device{Name: devName, Attributes: attrs})
	}
	return out, nil
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
// resourceapi.ResourceSliceMaxDevices, in order. An empty pool has one
// empty slice: "no devices" differs from "no driver".
func (p Pool) Slices() [][]resourceapi.Device {
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
