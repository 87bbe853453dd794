//go:build e2e

package framework

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/dynamic-resource-allocation/resourceslice"
	cdispec "tags.cncf.io/container-device-interface/specs-go"

	"github.com/railyard-io/railyard/internal/dra"
	"github.com/railyard-io/railyard/internal/dra/gpustandin"
	"github.com/railyard-io/railyard/internal/topology"
)

// StandinGPUDRA is a STAND-IN for NVIDIA's GPU DRA kubelet plugin, named
// so: the real kubeletplugin helper in the test process, driver
// gpu.nvidia.com, publishing a model's GPUs as internal/dra/gpustandin
// shapes them for one node; Prepare gives the container
// STANDIN_GPUS=<PCI addresses> through a CDI spec of its own.
type StandinGPUDRA struct {
	Topo *topology.Topology
	// CDIDir is where the node's containerd reads CDI specs, as this
	// process sees it.
	CDIDir string
	helper *kubeletplugin.Helper
}

// StartStandinGPUDRA registers the stand-in with the kubelet whose root
// directory kubeletRoot is (as this process sees it) and publishes the
// node's GPUs. Stop it with Stop.
func StartStandinGPUDRA(ctx context.Context, client kubernetes.Interface, node, kubeletRoot, cdiDir string, topo *topology.Topology) (*StandinGPUDRA, error) {
	g := &StandinGPUDRA{Topo: topo, CDIDir: cdiDir}
	dir := filepath.Join(kubeletRoot, "plugins", gpustandin.DriverName)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, err
	}
	h, err := kubeletplugin.Start(ctx, g, kubeletplugin.DriverName(gpustandin.DriverName), kubeletplugin.NodeName(node),
		kubeletplugin.KubeClient(client), kubeletplugin.PluginDataDirectoryPath(dir),
		kubeletplugin.RegistrarDirectoryPath(filepath.Join(kubeletRoot, "plugins_registry")))
	if err != nil {
		return nil, fmt.Errorf("stand-in GPU DRA plugin on %s: %w", node, err)
	}
	g.helper = h
	if err := h.PublishResources(ctx, resourceslice.DriverResources{Pools: map[string]resourceslice.Pool{
		node: {Slices: []resourceslice.Slice{{Devices: gpustandin.Devices(topo)}}},
	}}); err != nil {
		h.Stop()
		return nil, fmt.Errorf("stand-in GPU DRA plugin on %s: %w", node, err)
	}
	return g, nil
}

// Stop unregisters the plugin (its slices stay until the kubelet or a
// test removes them).
func (g *StandinGPUDRA) Stop() { g.helper.Stop() }

func (g *StandinGPUDRA) PrepareResourceClaims(_ context.Context, claims []*resourceapi.ResourceClaim) (map[types.UID]kubeletplugin.PrepareResult, error) {
	pci := map[string]string{}
	for _, d := range gpustandin.Devices(g.Topo) {
		pci[d.Name] = *d.Attributes[dra.AttrPCIBusID].StringValue
	}
	out := map[types.UID]kubeletplugin.PrepareResult{}
	for _, c := range claims {
		var devs []kubeletplugin.Device
		var addrs []string
		for _, r := range c.Status.Allocation.Devices.Results {
			if r.Driver != gpustandin.DriverName {
				continue
			}
			addrs = append(addrs, pci[r.Device])
			devs = append(devs, kubeletplugin.Device{Requests: []string{r.Request}, PoolName: r.Pool, DeviceName: r.Device,
				CDIDeviceIDs: []string{"standin.railyard.io/gpu=" + string(c.UID)}})
		}
		spec := cdispec.Spec{Kind: "standin.railyard.io/gpu", Devices: []cdispec.Device{{
			Name: string(c.UID), ContainerEdits: cdispec.ContainerEdits{Env: []string{"STANDIN_GPUS=" + strings.Join(addrs, ",")}}}}}
		// A device name starting with a digit (half of all UIDs) needs 0.5.0.
		ver, err := cdispec.MinimumRequiredVersion(&spec)
		if err != nil {
			out[c.UID] = kubeletplugin.PrepareResult{Err: err}
			continue
		}
		spec.Version = ver
		b, _ := json.Marshal(spec)
		if err := os.WriteFile(g.specPath(c.UID), b, 0o644); err != nil {
			out[c.UID] = kubeletplugin.PrepareResult{Err: err}
			continue
		}
		out[c.UID] = kubeletplugin.PrepareResult{Devices: devs}
	}
	return out, nil
}

func (g *StandinGPUDRA) UnprepareResourceClaims(_ context.Context, claims []kubeletplugin.NamespacedObject) (map[types.UID]error, error) {
	out := map[types.UID]error{}
	for _, c := range claims {
		if err := os.Remove(g.specPath(c.UID)); err != nil && !os.IsNotExist(err) {
			out[c.UID] = err
			continue
		}
		out[c.UID] = nil
	}
	return out, nil
}

func (g *StandinGPUDRA) HandleError(_ context.Context, err error, msg string) {
	fmt.Printf("stand-in GPU DRA plugin: %s: %v\n", msg, err)
}

// WatchHealthStatus: the stand-in has no GPUs to watch.
func (g *StandinGPUDRA) WatchHealthStatus(context.Context, chan<- kubeletplugin.DeviceHealthReport) error {
	return kubeletplugin.ErrHealthNotSupported
}

func (g *StandinGPUDRA) specPath(uid types.UID) string {
	return filepath.Join(g.CDIDir, "standin.railyard.io-gpu_"+string(uid)+".json")
}
