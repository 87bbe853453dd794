package containerdev

import (
	"cmp"
	"encoding/json"
	"slices"
	"strings"
)

// Device is one RDMA device a container gets, as its environment names it.
type Device struct {
	// Resource is its pool ("railyard.io/rdma_vf"), PCI the address the
	// container sees (a share's: its NIC's), PF its NIC's address.
	Resource, PCI, PF string
	// Rail is its NIC's rail index (-1: on no GPU's rail); it orders the
	// lists (Compare).
	Rail int
	// RDMA is its RDMA device ("mlx5_3"; "" when none), Nodes its char
	// devices under Dir (Options.Nodes).
	RDMA  string
	Nodes []string
	// Leaf is the leaf switch its port is cabled to, as the node's LLDP
	// neighbors say (the DRA attribute railyard.io/leaf; "" unknown).
	Leaf string
}

// Compare is rail order, the order NCCL_IB_HCA and every list of Env
// keep: rail index (devices on no rail last), then PF address, then PCI
// address.
func Compare(a, b Device) int {
	rail := func(r int) int {
		if r < 0 {
			return int(^uint(0) >> 1)
		}
		return r
	}
	return cmp.Or(cmp.Compare(rail(a.Rail), rail(b.Rail)), strings.Compare(a.PF, b.PF), strings.Compare(a.PCI, b.PCI))
}

// Var is one environment variable.
type Var struct{ Name, Value string }

// Vars is an environment, in a fixed order.
type Vars []Var

// Strings is the environment as CDI spells it: "NAME=value".
func (vs Vars) Strings() []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = v.Name + "=" + v.Value
	}
	return out
}

// Map is the environment as the device plugin API carries it.
func (vs Vars) Map() map[string]string {
	out := make(map[string]string, len(vs))
	for _, v := range vs {
		out[v.Name] = v.Value
	}
	return out
}

// EnvName is the SR-IOV device plugin's variable for a resource:
// "railyard.io/rdma_vf-a" -> "PCIDEVICE_RAILYARD_IO_RDMA_VF_A". Its _INFO
// variable appends "_INFO".
func EnvName(resource string) string {
	r := strings.NewReplacer(".", "_", "/", "_", "-", "_").Replace(resource)
	return "PCIDEVICE_" + strings.ToUpper(r)
}

// RDMAEnvName is the per-pool variable listing a container's RDMA devices
// of a resource in rail order ("RAILYARD_RDMA_DEVICES_RAILYARD_IO_RDMA_VF_A").
// Unlike NCCL_IB_HCA it never conflicts with another pool's variable.
func RDMAEnvName(resource string) string {
	return "RAILYARD_RDMA_DEVICES_" + strings.TrimPrefix(EnvName(resource), "PCIDEVICE_")
}

// infoEntry is one device's entry of PCIDEVICE_<POOL>_INFO, in the SR-IOV
// device plugin's shape: {"generic":{"deviceID":...},"rdma":{"uverbs":...}}.
type infoEntry struct {
	Generic map[string]string `json:"generic"`
	RDMA    map[string]string `json:"rdma,omitempty"`
}

// Env is the environment of a container's RDMA devices, in rail order
// (Compare) whatever order they are given in. Per pool, pools sorted:
//
//	PCIDEVICE_<POOL>               the PCI addresses, each once (shares of a NIC name it once)
//	PCIDEVICE_<POOL>_INFO          their device-info JSON: {"<pci>":{"generic":{"deviceID":...},"rdma":{"rdma_dev":...,"uverbs":"/dev/infiniband/uverbs3",...}}}
//	RAILYARD_RDMA_DEVICES_<POOL>   the RDMA devices (when any)
//
// then, when any device has an RDMA device, the NCCL settings
// (Settings, the table in nccl.go): NCCL_IB_HCA with o.NCCLIBHCA, what the
// operator configured (o.NCCL) or the node's fabric says, and, with
// o.Overridable, Railyard's defaults. The device plugin, late binding's
// CDI specs, the DRA driver's and railyard-cni's late binding all call
// it, so a container sees the same variables whichever delivered its
// devices.
func Env(devs []Device, o EnvOptions) Vars {
	devs = slices.Clone(devs)
	slices.SortStableFunc(devs, Compare)
	perPool := map[string][]Device{}
	var resources []string
	var in ncclInput
	for _, d := range devs {
		pool, ok := perPool[d.Resource]
		if !ok {
			resources = append(resources, d.Resource)
		}
		if slices.ContainsFunc(pool, func(o Device) bool { return o.PCI == d.PCI }) {
			continue // another share of the same NIC
		}
		perPool[d.Resource] = append(pool, d)
		if d.RDMA != "" && !slices.Contains(in.hcas, d.RDMA) {
			in.hcas = append(in.hcas, d.RDMA)
			in.leaves = append(in.leaves, d.Leaf)
		}
	}
	slices.Sort(resources)
	var env Vars
	for _, r := range resources {
		var pcis, rdmas []string
		info := map[string]infoEntry{}
		for _, d := range perPool[r] {
			pcis = append(pcis, d.PCI)
			e := infoEntry{Generic: map[string]string{"deviceID": d.PCI}}
			if d.RDMA != "" {
				rdmas = append(rdmas, d.RDMA)
				e.RDMA = map[string]string{"rdma_dev": d.RDMA}
				for _, n := range d.Nodes {
					e.RDMA[Kind(n)] = ContainerPath(n)
				}
			}
			info[d.PCI] = e
		}
		ij, _ := json.Marshal(info) // maps of strings: never fails
		env = append(env, Var{EnvName(r), strings.Join(pcis, ",")}, Var{EnvName(r) + "_INFO", string(ij)})
		if len(rdmas) > 0 {
			env = append(env, Var{RDMAEnvName(r), strings.Join(rdmas, ",")})
		}
	}
	in.o = o
	return append(env, ncclEnv(in)...)
}

// EnvOptions are how Env sets the NCCL variables beside the devices'.
type EnvOptions struct {
	// NCCLIBHCA sets NCCL_IB_HCA to the container's RDMA devices.
	NCCLIBHCA bool
	// NCCL is the operator's NCCL configuration.
	NCCL NCCL
	// Overridable says the environment reaches the container where the
	// pod's own variables win over it: a device plugin's Allocate
	// (kubelet puts its variables before the container's, and of two
	// values of a variable the container runs with the last). Railyard's
	// defaults (RailyardDefault) are set only then. A CDI spec's edits
	// are applied by the runtime after the pod spec and win over it, so
	// late binding and DRA set only what the devices, the operator and
	// the fabric decide.
	Overridable bool
}
