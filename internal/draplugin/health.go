package draplugin

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	resourceapi "k8s.io/api/resource/v1"
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

// SetTaintUnhealthy chooses how unhealthy devices are published
// (dra.Options.TaintUnhealthy: tainted, or left out) and, once the driver
// has a topology, rebuilds and republishes. Turn it on only where the API
// server keeps device taints (ProbeTaints).
func (d *Driver) SetTaintUnhealthy(ctx context.Context, on bool) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.taint == on {
		return nil
	}
	d.taint = on
	if d.topo == nil {
		return nil
	}
	_, err := d.rebuildLocked(ctx, d.topo, d.leaves)
	return err
}

// TaintUnhealthy reports whether unhealthy devices are published tainted.
func (d *Driver) TaintUnhealthy() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.taint
}

// taintsDropped reports whether err is the ResourceSlice controller's
// report that the API server dropped the devices' taints (DRADeviceTaints
// off): the slices it stored publish unhealthy devices untainted.
func taintsDropped(err error) bool {
	var dropped *resourceslice.DroppedFieldsError
	return errors.As(err, &dropped) && slices.Contains(dropped.DisabledFeatures(), "DRADeviceTaints")
}

// ProbeTaints asks the API server whether it keeps a device's taints
// (DRADeviceTaints: GA and on in Kubernetes 1.37, alpha and off in 1.35)
// by creating a ResourceSlice of node with one tainted device in a
// server-side dry run, which stores nothing: the answer is what the
// server would store. The agent's own-node admission policy applies to
// it like to the real slices.
func ProbeTaints(ctx context.Context, c kubernetes.Interface, node string) (bool, error) {
	s := &resourceapi.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{GenerateName: node + "-railyard-taint-probe-"},
		Spec: resourceapi.ResourceSliceSpec{
			Driver:   dra.DriverName,
			Pool:     resourceapi.ResourcePool{Name: node + "/railyard-taint-probe", ResourceSliceCount: 1},
			NodeName: &node,
			Devices: []resourceapi.Device{{Name: "probe",
				Taints: []resourceapi.DeviceTaint{{Key: dra.TaintKey, Value: "probe", Effect: resourceapi.DeviceTaintEffectNoSchedule}}}},
		},
	}
	out, err := c.ResourceV1().ResourceSlices().Create(ctx, s, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if err != nil {
		return false, fmt.Errorf("draplugin: probing device taints with a dry-run ResourceSlice: %w", err)
	}
	return len(out.Spec.Devices) == 1 && len(out.Spec.Devices[0].Taints) == 1, nil
}
