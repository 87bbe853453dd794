package binding

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	cdispec "tags.cncf.io/container-device-interface/specs-go"
)

// EnvDevice is one RDMA device a container gets, as its environment
// names it.
type EnvDevice struct {
	// Resource is its pool ("railyard.io/rdma_vf"), PCI its address.
	Resource, PCI string
	// RDMA is its RDMA device ("mlx5_3"; "" when none), Nodes its char
	// devices under /dev/infiniband ("uverbs3", "rdma_cm", "umad3").
	RDMA  string
	Nodes []string
}

// ContainerEnv is the environment of a container's RDMA devices, given in
// rail order, which every list keeps. Per pool, pools sorted:
//
//	PCIDEVICE_<POOL>               the PCI addresses (the SR-IOV device plugin's variable)
//	PCIDEVICE_<POOL>_INFO          its device-info JSON: {"<pci>":{"generic":{"deviceID":...},"rdma":{"rdma_dev":...,"uverbs":"/dev/infiniband/uverbs3",...}}}
//	RAILYARD_RDMA_DEVICES_<POOL>   the RDMA devices (when any)
//
// and, with ncclIBHCA, NCCL_IB_HCA "=" and every RDMA device of every
// pool ("=" asks NCCL for exact names: plain mlx5_1 would also match
// mlx5_10). Late binding's CDI specs and the DRA driver's use it, so a
// container sees the same variables whichever delivered its devices.
func ContainerEnv(devs []EnvDevice, ncclIBHCA bool) ([]string, error) {
	type infoEntry struct {
		Generic map[string]string `json:"generic"`
		RDMA    map[string]string `json:"rdma,omitempty"`
	}
	perPool := map[string][]EnvDevice{}
	var resources, hcas []string
	for _, d := range devs {
		if _, ok := perPool[d.Resource]; !ok {
			resources = append(resources, d.Resource)
		}
		perPool[d.Resource] = append(perPool[d.Resource], d)
		if d.RDMA != "" && !slices.Contains(hcas, d.RDMA) {
			hcas = append(hcas, d.RDMA)
		}
	}
	slices.Sort(resources)
	var env []string
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
					e.RDMA[strings.TrimRight(n, "0123456789")] = containerIB + "/" + n
				}
			}
			info[d.PCI] = e
		}
		ij, err := json.Marshal(info)
		if err != nil {
			return nil, fmt.Errorf("encoding %s_INFO: %w", EnvName(r), err)
		}
		env = append(env, EnvName(r)+"="+strings.Join(pcis, ","), EnvName(r)+"_INFO="+string(ij))
		if len(rdmas) > 0 {
			env = append(env, RDMAEnvName(r)+"="+strings.Join(rdmas, ","))
		}
	}
	if ncclIBHCA && len(hcas) > 0 {
		env = append(env, "NCCL_IB_HCA=="+strings.Join(hcas, ","))
	}
	return env, nil
}

// CDIDeviceNodes are the CDI device nodes of a device's char devices
// (names under /dev/infiniband: "uverbs3", "rdma_cm"), each at the same
// path in the container as under devRoot on the host. Type, major and
// minor are left out: the CDI library fills them from the host path when
// it injects the device.
func CDIDeviceNodes(devRoot string, nodes []string) []*cdispec.DeviceNode {
	out := make([]*cdispec.DeviceNode, 0, len(nodes))
	for _, n := range nodes {
		out = append(out, &cdispec.DeviceNode{Path: containerIB + "/" + n, HostPath: filepath.Join(devRoot, "infiniband", n), Permissions: "rw"})
	}
	return out
}
