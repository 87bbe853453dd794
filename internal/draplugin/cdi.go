package draplugin

import (
	"encoding/json"
	"fmt"
	"path/filepath"

	"k8s.io/apimachinery/pkg/types"
	cdispec "tags.cncf.io/container-device-interface/specs-go"

	"github.com/railyard-io/railyard/internal/containerdev"
)

// specPrefix starts every per-claim spec file's name.
const specPrefix = "rdma.railyard.io-claim_"

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
// (containerdev.Env, the same variables late binding's specs and the
// device plugin set; the same values in every device, so no variable
// conflicts when a container gets several):
//
//	PCIDEVICE_<POOL>               the claim's PCI addresses of that pool, rail order
//	PCIDEVICE_<POOL>_INFO          their device-info JSON, as the device plugin's
//	RAILYARD_RDMA_DEVICES_<POOL>   their RDMA devices
//	NCCL_IB_HCA                    "=" and every RDMA device of the claim, rail order
//	NCCL_*                         the rest of containerdev's NCCL settings that the operator (nccl)
//	                               and the fabric decide: NCCL_CROSS_NIC 0 when each device's
//	                               published railyard.io/leaf is its own; never Railyard's
//	                               defaults, as CDI edits win over the pod's own variables
func renderSpec(devRoot string, nccl containerdev.NCCL, pc *preparedClaim) ([]byte, error) {
	devs := make([]containerdev.Device, 0, len(pc.Devices))
	for _, pd := range pc.Devices {
		devs = append(devs, pd.containerDevice())
	}
	env := containerdev.Env(devs, containerdev.EnvOptions{NCCLIBHCA: true, NCCL: nccl}).Strings()
	spec := &cdispec.Spec{Kind: CDIKind}
	for _, pd := range pc.Devices {
		dev := cdispec.Device{Name: cdiName(pc.UID, pd.Device)}
		dev.ContainerEdits.DeviceNodes = containerdev.CDINodes(devRoot, pd.Nodes)
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
