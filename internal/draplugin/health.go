package draplugin

import (
	"context"
	"errors"
	"fmt"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/dynamic-resource-allocation/resourceslice"

	"github.com/railyard-io/railyard/internal/dra"
)

// Health reporting to kubelet (KEP-4680: the health of a pod's allocated
// devices in its status). Kubelet reports a device's health as Unknown
// when no report refreshed it within its timeout, so reports are resent
// every healthResend, well inside healthTimeout.
const (
	healthResend  = 10 * time.Second
	healthTimeout = 30 * time.Second
)

// WatchHealthStatus sends kubelet the health of every device of the
// driver's pools (dra.Pool.Health: unhealthy ones with their reason), at
// once, after every rebuild (rediscovery, leaves, taint mode) and every
// healthResend, until ctx ends. Before the first topology the report is
// empty. Kubelet calls it again when it reconnects.
func (d *Driver) WatchHealthStatus(ctx context.Context, reports chan<- kubeletplugin.DeviceHealthReport) error {
	for {
		d.mu.Lock()
		r, changed := d.healthReportLocked(), d.healthChanged
		d.mu.Unlock()
		select {
		case <-ctx.Done():
			return nil
		case reports <- r:
		}
		t := time.NewTimer(healthResend)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-changed:
			t.Stop()
		case <-t.C:
		}
	}
}

// healthReportLocked is every pool's devices and their health.
func (d *Driver) healthReportLocked() kubeletplugin.DeviceHealthReport {
	var r kubeletplugin.DeviceHealthReport
	for _, p := range d.pools {
		for _, h := range p.Health {
			dh := kubeletplugin.DeviceHealth{PoolName: p.Name, DeviceName: h.Device, Health: kubeletplugin.HealthStatusHealthy,
				LastUpdated: d.builtAt, HealthCheckTimeout: healthTimeout, Message: h.Reason}
			if !h.Healthy {
				dh.Health = kubeletplugin.HealthStatusUnhealthy
			}
			r.Devices = append(r.Devices, dh)
		}
	}
	return r
}

// notifyHealthLocked wakes every WatchHealthStatus: the pools changed.
func (d *Driver) notifyHealthLocked() {
	close(d.healthChanged)
	d.healthChanged = make(chan struct{})
}

// ServerFeatures are the DRA fields of a ResourceSlice that the API
// server keeps (it drops those of features its gates turn off) and that
// the driver publishes only where it keeps them.
type ServerFeatures struct {
	// Taints: device taints (DRADeviceTaints, GA in Kubernetes 1.37, off
	// in 1.35). Kept, unhealthy devices are published tainted
	// (dra.Options.TaintUnhealthy); otherwise they are left out.
	Taints bool
	// ConsumableCapacity: allowMultipleAllocations and capacity request
	// policies (DRAConsumableCapacity, beta and on in 1.37, off in 1.35).
	// Kept, shared pools are published (dra.Options.ConsumableCapacity);
	// otherwise their NICs are left out.
	ConsumableCapacity bool
}

// SetServerFeatures sets what the API server keeps (ProbeFeatures) and,
// once the driver has a topology, rebuilds and republishes.
func (d *Driver) SetServerFeatures(ctx context.Context, f ServerFeatures) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.features == f {
		return nil
	}
	d.features = f
	if d.topo == nil {
		return nil
	}
	_, err := d.rebuildLocked(ctx, d.topo, d.leaves)
	return err
}

// ServerFeatures reports what the driver publishes as kept by the server.
func (d *Driver) ServerFeatures() ServerFeatures {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.features
}

// dropped reports which of f's features the ResourceSlice controller's
// error says the API server dropped (a downgrade, or gates turned off
// after the probe): the driver must stop publishing them, or unhealthy
// devices would be schedulable and shared NICs go to one claim each.
func (f ServerFeatures) dropped(err error) (ServerFeatures, bool) {
	var de *resourceslice.DroppedFieldsError
	if !errors.As(err, &de) {
		return f, false
	}
	out := f
	for _, name := range de.DisabledFeatures() {
		switch name {
		case "DRADeviceTaints":
			out.Taints = false
		case "DRAConsumableCapacity":
			out.ConsumableCapacity = false
		}
	}
	return out, out != f
}

// ProbeFeatures asks the API server which of ServerFeatures it keeps by
// creating a ResourceSlice of node in a server-side dry run, which stores
// nothing: one device with a taint, one allocatable many times with a
// capacity request policy. The answer is what the server would store. The
// agent's own-node admission policy applies to it like to the real slices.
func ProbeFeatures(ctx context.Context, c kubernetes.Interface, node string) (ServerFeatures, error) {
	one := resource.MustParse("1")
	yes := true
	s := &resourceapi.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{GenerateName: node + "-railyard-probe-"},
		Spec: resourceapi.ResourceSliceSpec{
			Driver:   dra.DriverName,
			Pool:     resourceapi.ResourcePool{Name: node + "/railyard-probe", ResourceSliceCount: 1},
			NodeName: &node,
			Devices: []resourceapi.Device{
				{Name: "taint", Taints: []resourceapi.DeviceTaint{{Key: dra.TaintKey, Value: "probe", Effect: resourceapi.DeviceTaintEffectNoSchedule}}},
				{Name: "shared", AllowMultipleAllocations: &yes, Capacity: map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{
					dra.CapacityShares: {Value: one, RequestPolicy: &resourceapi.CapacityRequestPolicy{Default: &one}}}},
			},
		},
	}
	out, err := c.ResourceV1().ResourceSlices().Create(ctx, s, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if err != nil {
		return ServerFeatures{}, fmt.Errorf("draplugin: probing the API server's DRA features with a dry-run ResourceSlice: %w", err)
	}
	var f ServerFeatures
	for _, dev := range out.Spec.Devices {
		switch dev.Name {
		case "taint":
			f.Taints = len(dev.Taints) == 1
		case "shared":
			f.ConsumableCapacity = dev.AllowMultipleAllocations != nil && *dev.AllowMultipleAllocations
		}
	}
	return f, nil
}
