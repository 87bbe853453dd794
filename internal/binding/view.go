package binding

import (
	"fmt"
	"slices"
	"strings"

	"github.com/railyard-io/railyard/internal/containerdev"
	"github.com/railyard-io/railyard/internal/topology"
)

// viewVersion is the version of View's JSON; a binder refuses another.
const viewVersion = 1

// View is what the agent publishes for binders (itself and railyard-cni):
// the node's topology in a form topology.Build reads back without sysfs,
// every pool in sandbox binding mode, and where things are. It is written
// by the agent at every discovery that changes it.
type View struct {
	Version int `json:"version"`
	// GPUs, NICs (with their VFs and ports) and Links (every GPU x NIC
	// class) are the topology; Build gets the links as given classes.
	GPUs  []topology.GPU  `json:"gpus"`
	NICs  []topology.NIC  `json:"nics"`
	Links []topology.Link `json:"links"`
	Pools []Pool          `json:"pools"`
	// PodResourcesSocket is kubelet's PodResources socket.
	PodResourcesSocket string `json:"podResourcesSocket"`
	// GPUResourceNames are the GPU resources in PodResources; GPUMap maps
	// GPU device IDs that are not PCI addresses (NVIDIA UUIDs).
	GPUResourceNames []string          `json:"gpuResourceNames"`
	GPUMap           map[string]string `json:"gpuMap,omitempty"`
	// CDISpecDir receives one CDI spec per bound token ("/var/run/cdi").
	CDISpecDir string `json:"cdiSpecDir"`
	// DevRoot is the host's /dev (device nodes are <DevRoot>/infiniband/...).
	DevRoot string `json:"devRoot"`
	// DevInfoDir receives Multus device-info files ("" = none).
	DevInfoDir string `json:"devInfoDir,omitempty"`
	// NCCLIBHCA: the CDI spec sets NCCL_IB_HCA to the container's devices.
	NCCLIBHCA bool `json:"ncclIBHCA"`
	// NCCL is the agent's NCCL configuration (ncclCrossNIC, ncclProfile,
	// ncclSocketIfname, ncclIBAddrFamily: its fields, at the top level).
	containerdev.NCCL
}

// Pool is one pool in sandbox binding mode.
type Pool struct {
	Resource string `json:"resource"`
	// Tag is PoolTag(Resource), the middle of its token IDs.
	Tag string `json:"tag"`
	// Policy is the allocation policy that binds (alloc.ByName).
	Policy string `json:"policy"`
	// RDMACM, UMAD, ISSM: the extra device nodes a container gets.
	RDMACM bool `json:"rdmaCM"`
	UMAD   bool `json:"umad"`
	ISSM   bool `json:"issm"`
	// Devices are the physical devices behind the tokens, sorted by ID.
	Devices []Device `json:"devices"`
	// Refused, when set, says why the pool binds nothing (ErrPoolRefused):
	// a token kubelet holds lost its binding and its device is unknown.
	Refused string `json:"refused,omitempty"`
}

// Device is a physical device of a pool (a VF or PF).
type Device struct {
	ID string `json:"id"` // PCI address
	PF string `json:"pf"`
	// NUMA is the device's NUMA node (-1 unknown); Rail its NIC's rail index
	// (-1 when no GPU's rail), which orders NCCL_IB_HCA.
	NUMA    int    `json:"numa"`
	Rail    int    `json:"rail"`
	RDMA    string `json:"rdma,omitempty"`
	Uverbs  string `json:"uverbs,omitempty"`
	UMAD    string `json:"umad,omitempty"`
	ISSM    string `json:"issm,omitempty"`
	Healthy bool   `json:"healthy"`
	Reason  string `json:"reason,omitempty"`
}

// ViewFromTopology copies what binders need of t into a View (pools and
// settings are the caller's). VFs keep their address and their ports'
// state (health); other details are dropped to keep the file small (a
// binder parses it once per railyard-cni ADD).
func ViewFromTopology(t *topology.Topology) View {
	v := View{Version: viewVersion, GPUs: slices.Clone(t.GPUs), Links: slices.Clone(t.Links)}
	v.NICs = make([]topology.NIC, len(t.NICs))
	for i, n := range t.NICs {
		n.VFs = slices.Clone(n.VFs)
		for j := range n.VFs {
			// What the policies read of a VF: its address and its ports'
			// state (health). The pool's devices carry the rest.
			vf := n.VFs[j]
			ports := make([]topology.Port, len(vf.Ports))
			for k, p := range vf.Ports {
				ports[k] = topology.Port{Num: p.Num, State: p.State, PhysState: p.PhysState}
			}
			n.VFs[j] = topology.VF{Index: vf.Index, PCI: vf.PCI, Ports: ports}
		}
		v.NICs[i] = n
	}
	return v
}

// Topology rebuilds the topology from the view: the links are given as
// pair classes, so no sysfs is read and every class is the agent's.
func (v *View) Topology() *topology.Topology {
	pcs := make([]topology.PairClass, len(v.Links))
	for i, l := range v.Links {
		pcs[i] = topology.PairClass(l)
	}
	return topology.Build(topology.Inventory{GPUs: v.GPUs, NICs: v.NICs, PairClasses: pcs})
}

// Pool returns the pool with tag tag.
func (v *View) Pool(tag string) (*Pool, bool) {
	for i := range v.Pools {
		if v.Pools[i].Tag == tag {
			return &v.Pools[i], true
		}
	}
	return nil, false
}

// PoolByResource returns the pool of resource.
func (v *View) PoolByResource(resource string) (*Pool, bool) {
	return v.Pool(PoolTag(resource))
}

// Device returns the pool's device id.
func (p *Pool) Device(id string) (Device, bool) {
	i, ok := slices.BinarySearchFunc(p.Devices, id, func(d Device, id string) int { return strings.Compare(d.ID, id) })
	if !ok {
		return Device{}, false
	}
	return p.Devices[i], true
}

// check validates a view read from disk.
func (v *View) check() error {
	if v.Version != viewVersion {
		return fmt.Errorf("view version %d, want %d", v.Version, viewVersion)
	}
	for i := range v.Pools {
		p := &v.Pools[i]
		if p.Tag != PoolTag(p.Resource) {
			return fmt.Errorf("pool %s: tag %q is not its resource's", p.Resource, p.Tag)
		}
		if !slices.IsSortedFunc(p.Devices, func(a, b Device) int { return strings.Compare(a.ID, b.ID) }) {
			return fmt.Errorf("pool %s: devices not sorted", p.Resource)
		}
	}
	return nil
}
