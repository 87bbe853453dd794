package deviceplugin

import (
	"strings"

	"github.com/railyard-io/railyard/internal/containerdev"
)

// EnvName returns the SR-IOV device plugin's env var name for a resource
// (containerdev.EnvName): "railyard.io/rdma_vf-a" ->
// "PCIDEVICE_RAILYARD_IO_RDMA_VF_A". The _INFO variable appends "_INFO".
func EnvName(resource string) string { return containerdev.EnvName(resource) }

// RDMAEnvName returns the per-pool variable listing the RDMA devices a
// container got from a resource, in rail order (containerdev.RDMAEnvName).
func RDMAEnvName(resource string) string { return containerdev.RDMAEnvName(resource) }

// SocketName is the plugin's socket file name in the device plugin
// directory: "railyard-railyard_io_rdma_vf_a.sock".
func SocketName(resource string) string {
	return "railyard-" + strings.NewReplacer(".", "_", "/", "_").Replace(resource) + ".sock"
}
