package draplugin

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/types"
	cdispec "tags.cncf.io/container-device-interface/specs-go"

	"github.com/railyard-io/railyard/internal/binding"
)

// specPrefix starts every per-claim spec file's name.
const specPrefix = "rdma.railyard.io-claim_"

// containerIB is where RDMA device nodes appear in a container.
const containerIB = "/dev/infiniband"

// SpecPath is the CDI spec file of a claim in dir.
func SpecPath(dir string, uid types.UID) string {
	return filepath.Join(dir, specPrefix+string(uid)+".json")
}

// cdiName is the CDI device name of one device of a claim: unique per
// claim UID, so a runtime's cached spec of an earlier claim never matches.
func cdiName(uid types.UID, device string) string {
	return string(uid) + "-" + device
}

// renderSpec is a claim's CDI spec: one device per allocated device with
// that device's own nodes, each setting the claim's whole environment
// (the same values in every device, so no variable conflicts when a
// container gets several):
//
//	PCIDEVICE_<POOL>               the claim's PCI addresses of that pool, rail order
//	RAILYARD_RDMA_DEVICES_<POOL>   their RDMA devices
//	NCCL_IB_HCA                    "=" and every RDMA device of the claim, rail order
func renderSpec(devRoot string, pc *preparedClaim) ([]byte, error) {
	env := claimEnv(pc)
	spec := &cdispec.Spec{Kind: CDIKind}
	for _, pd := range pc.Devices {
		dev := cdispec.Device{Name: cdiName(pc.UID, pd.Device)}
		for _, n := range pd.Nodes {
			// Type, major and minor are left out: the CDI library fills
			// them from the host path when it injects the device.
			dev.ContainerEdits.DeviceNodes = append(dev.ContainerEdits.DeviceNodes, &cdispec.DeviceNode{
				Path: containerIB + "/" + n, HostPath: filepath.Join(devRoot, "infiniband", n), Permissions: "rw"})
		}
		dev.ContainerEdits.Env = env
		spec.Devices = append(spec.Devices, dev)
	}
	ver, err := cdispec.MinimumRequiredVersion(spec)
	if err != nil {
		return nil, fmt.Errorf("draplugin: CDI spec version: %w", err)
	}
	spec.Version = ver
	b, err := json.MarshalIndent(spec, "", " ")
	if err != nil {
		return nil, fmt.Errorf("draplugin: encoding CDI spec: %w", err)
	}
	return b, nil
}

// claimEnv is the environment of a claim's devices (rail order kept).
func claimEnv(pc *preparedClaim) []string {
	perPool := map[string][]preparedDevice{}
	var resources, hcas []string
	for _, pd := range pc.Devices {
		if _, ok := perPool[pd.Resource]; !ok {
			resources = append(resources, pd.Resource)
		}
		perPool[pd.Resource] = append(perPool[pd.Resource], pd)
		if pd.RDMA != "" && !slices.Contains(hcas, pd.RDMA) {
			hcas = append(hcas, pd.RDMA)
		}
	}
	slices.Sort(resources)
	var env []string
	for _, r := range resources {
		var addrs, rdmas []string
		for _, pd := range perPool[r] {
			addrs = append(addrs, pd.PCI)
			if pd.RDMA != "" {
				rdmas = append(rdmas, pd.RDMA)
			}
		}
		env = append(env, binding.EnvName(r)+"="+strings.Join(addrs, ","))
		if len(rdmas) > 0 {
			env = append(env, binding.RDMAEnvName(r)+"="+strings.Join(rdmas, ","))
		}
	}
	if len(hcas) > 0 {
		// "=" asks NCCL for exact names: plain "mlx5_1" would also match mlx5_10.
		env = append(env, "NCCL_IB_HCA=="+strings.Join(hcas, ","))
	}
	return env
}
