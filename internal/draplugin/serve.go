package draplugin

import (
	"context"
	"fmt"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	metadatav1beta1 "k8s.io/dynamic-resource-allocation/api/metadata/v1beta1"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/klog/v2"

	"github.com/railyard-io/railyard/internal/dra"
)

// ServeOptions are where the kubelet plugin's sockets live and how it
// reaches the API server.
type ServeOptions struct {
	// Client reads ResourceClaims and writes this node's ResourceSlices.
	Client kubernetes.Interface
	// NodeUID, when known, saves the helper a Node lookup.
	NodeUID types.UID
	// PluginDataDir holds dra.sock ("/var/lib/kubelet/plugins/rdma.railyard.io");
	// it must exist.
	PluginDataDir string
	// RegistrarDir is the kubelet's plugin registration directory
	// ("/var/lib/kubelet/plugins_registry"); it must exist.
	RegistrarDir string
	// Logger receives the helper's own logs (gRPC calls at V(6), slice
	// publishing); the zero value discards them. The agent passes its slog
	// handler (logr.FromSlogHandler).
	Logger logr.Logger
}

// Serve starts the kubelet plugin (registration and DRA gRPC services)
// for d and publishes d's slices through it. Stop the returned helper (or
// cancel ctx) to end it.
func Serve(ctx context.Context, d *Driver, o ServeOptions) (*kubeletplugin.Helper, error) {
	opts := []kubeletplugin.Option{
		kubeletplugin.DriverName(dra.DriverName),
		kubeletplugin.NodeName(d.cfg.NodeName),
		kubeletplugin.KubeClient(o.Client),
		// KEP-5304: a metadata file per request, bind-mounted by CDI at
		// /var/run/kubernetes.io/dra-device-attributes/<claim>/<request>/metadata.json.
		kubeletplugin.EnableDeviceMetadata(true, []schema.GroupVersion{metadatav1beta1.SchemeGroupVersion}),
		// Rewritten in place, not by rename: containers bind-mount the file
		// (metadataWriteFile).
		kubeletplugin.MetadataFileOps(kubeletplugin.MetadataFileOperations{WriteFile: metadataWriteFile(d.cfg.CDISpecDir)}),
		kubeletplugin.CDIDirectory(d.cfg.CDISpecDir),
	}
	if o.NodeUID != "" {
		opts = append(opts, kubeletplugin.NodeUID(o.NodeUID))
	}
	if o.PluginDataDir != "" {
		opts = append(opts, kubeletplugin.PluginDataDirectoryPath(o.PluginDataDir))
	}
	if o.RegistrarDir != "" {
		opts = append(opts, kubeletplugin.RegistrarDirectoryPath(o.RegistrarDir))
	}
	log := o.Logger
	if log.GetSink() == nil {
		log = logr.Discard()
	}
	// The helper logs through the context's logger (klog's global one
	// otherwise).
	ctx = klog.NewContext(ctx, log)
	h, err := kubeletplugin.Start(ctx, d, opts...)
	if err != nil {
		return nil, fmt.Errorf("draplugin: starting the kubelet plugin: %w", err)
	}
	// Unhealthy devices are published tainted, and shared NICs at all,
	// only where the server keeps what that needs.
	f, err := ProbeFeatures(ctx, o.Client, d.cfg.NodeName)
	switch {
	case err != nil:
		log.Error(err, "DRA features: cannot tell what the API server keeps; unhealthy devices and shared pools' NICs are left out of the ResourceSlices")
	default:
		if f.Taints {
			log.Info("device taints: the API server keeps them; unhealthy devices are published with a NoSchedule taint", "key", dra.TaintKey)
		} else {
			log.Info("device taints: the API server drops them (DRADeviceTaints off, as before Kubernetes 1.37); unhealthy devices are left out of the ResourceSlices")
		}
		if f.ConsumableCapacity {
			log.Info("consumable capacity: the API server keeps it; each NIC of a shared pool is published once, allocatable to many claims", "capacity", dra.CapacityShares)
		} else if d.hasSharedPool() {
			log.Error(nil, "consumable capacity: the API server drops it (DRAConsumableCapacity off, as in Kubernetes 1.35); the NICs of shared pools are not published: serve them with the device plugin (delivery: devicePlugin) on this cluster")
		}
	}
	if err := d.SetServerFeatures(ctx, f); err != nil {
		h.Stop()
		return nil, err
	}
	if err := d.SetPublisher(ctx, h); err != nil {
		h.Stop()
		return nil, err
	}
	d.mu.Lock()
	d.meta = h
	d.mu.Unlock()
	go d.runStatus(ctx, o.Client, log)
	return h, nil
}
