package deviceplugin

import (
	"strings"

	"github.com/railyard-io/railyard/internal/binding"
)

// EnvName returns the SR-IOV device plugin's env var name for a resource:
// "railyard.io/rdma_vf-a" -> "PCIDEVICE_RAILYARD_IO_RDMA_VF_A". The _INFO
// variable appends "_INFO".
func EnvName(resource string) string { return binding.EnvName(resource) }

// RDMAEnvName returns the per-pool variable listing the RDMA devices a
// container got from a resource, in rail order:
// "railyard.io/rdma_vf-a" -> "RAILYARD_RDMA_DEVICES_RAILYARD_IO_RDMA_VF_A".
// Unlike NCCL_IB_HCA it never conflicts with another pool's variable.
func RDMAEnvName(resource string) string { return binding.RDMAEnvName(resource) }

// SocketName is the plugin's socket file name in the device plugin
// directory: "railyard-railyard_io_rdma_vf_a.sock".
func SocketName(resource string) string {
	return "railyard-" + strings.NewReplacer(".", "_", "/", "_").Replace(resource) + ".sock"
}

// DevInfoPath is the device-info-spec file of a device, named the way
// Multus (network-attachment-definition-client) looks it up:
// <dir>/<resource with / as ->-<id>-device.json.
func DevInfoPath(dir, resource, id string) string { return binding.DevInfoPath(dir, resource, id) }
