package draplugin_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/dynamic-resource-allocation/resourceslice"

	"github.com/railyard-io/railyard/internal/dra"
	"github.com/railyard-io/railyard/internal/draplugin"
	"github.com/railyard-io/railyard/internal/draplugin/draplugintest"
	"github.com/railyard-io/railyard/internal/fakesysfs"
)

func TestProbeFeaturesReadsWhatTheServerWouldStore(t *testing.T) {
	for _, keeps := range []draplugin.ServerFeatures{
		draplugintest.Release135, draplugintest.Release137, {Taints: true}, {ConsumableCapacity: true},
	} {
		c := fake.NewClientset()
		draplugintest.DryRunSlices(c, keeps)
		got, err := draplugin.ProbeFeatures(context.Background(), c, node)
		if err != nil || got != keeps {
			t.Errorf("server keeps %+v: probe says %+v, %v", keeps, got, err)
		}
		if l, _ := c.ResourceV1().ResourceSlices().List(context.Background(), metav1.ListOptions{}); len(l.Items) != 0 {
			t.Errorf("the probe stored %d slices", len(l.Items))
		}
	}
	// A refusal (admission, RBAC) is an error, never "kept".
	c := fake.NewClientset()
	c.PrependReactor("create", "resourceslices", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "resource.k8s.io", Resource: "resourceslices"}, "", errors.New("not your node"))
	})
	if got, err := draplugin.ProbeFeatures(context.Background(), c, node); err == nil || got != (draplugin.ServerFeatures{}) {
		t.Errorf("refused probe: %+v, %v", got, err)
	}
}

// nextReport waits for the next health report.
func nextReport(t *testing.T, ch <-chan kubeletplugin.DeviceHealthReport) kubeletplugin.DeviceHealthReport {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(30 * time.Second):
		t.Fatal("no health report in 30s")
	}
	return kubeletplugin.DeviceHealthReport{}
}

// unhealthy is the report's unhealthy devices and their messages.
func unhealthy(r kubeletplugin.DeviceHealthReport) map[string]string {
	out := map[string]string{}
	for _, d := range r.Devices {
		if d.Health != kubeletplugin.HealthStatusHealthy {
			out[d.DeviceName] = d.Message
		}
	}
	return out
}

// WatchHealthStatus reports every device at once, reports again as soon
// as rediscovery finds a port down (the PF and its VFs unhealthy, with the
// reason), and returns nil when kubelet's stream ends.
func TestWatchHealthStatusReportsAPortGoingDown(t *testing.T) {
	n := newNode(t, "dgx-h100", 2)
	d := n.driver(t)
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan kubeletplugin.DeviceHealthReport)
	done := make(chan error, 1)
	go func() { done <- d.WatchHealthStatus(ctx, ch) }()

	first := nextReport(t, ch)
	if len(first.Devices) != 24 || len(unhealthy(first)) != 0 {
		t.Fatalf("first report: %d devices, unhealthy %v; want 24, none", len(first.Devices), unhealthy(first))
	}
	for _, dh := range first.Devices {
		if dh.PoolName != node+"/rdma-vf" || dh.HealthCheckTimeout <= 0 || dh.LastUpdated.IsZero() {
			t.Fatalf("device %+v", dh)
		}
	}
	if err := fakesysfs.SetPortState(n.sysfs, "mlx5_0", 1, fakesysfs.PortDown); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := d.Update(ctx, n.topo(t)); err != nil {
		t.Fatal(err)
	}
	second := nextReport(t, ch)
	bad := unhealthy(second)
	if len(bad) != 2 || !strings.Contains(bad["pci-0000-18-00-1"], "port 1 is DOWN") || !strings.Contains(bad["pci-0000-18-00-2"], "PF 0000:18:00.0") {
		t.Errorf("after the port went down: unhealthy %v, want the PF's two VFs with the reason", bad)
	}
	if wait := time.Since(start); wait > 5*time.Second {
		t.Errorf("the change was reported after %v: not at once", wait)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("WatchHealthStatus: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("WatchHealthStatus did not return after its context ended")
	}
}

// Where the API server keeps taints, a down PF's VFs stay published with
// a NoSchedule taint; when the server is found to drop them (the
// ResourceSlice controller's DroppedFieldsError), the driver goes back to
// leaving them out, or they would be published schedulable.
func TestDroppedTaintsLeaveUnhealthyDevicesOut(t *testing.T) {
	n := newNode(t, "dgx-h100", 2)
	if err := fakesysfs.SetPortState(n.sysfs, "mlx5_0", 1, fakesysfs.PortDown); err != nil {
		t.Fatal(err)
	}
	d := n.driver(t)
	rec := record(t, d)
	ctx := context.Background()
	if err := d.SetServerFeatures(ctx, draplugin.ServerFeatures{Taints: true}); err != nil {
		t.Fatal(err)
	}
	res, _ := rec.last()
	var tainted []string
	for _, s := range res.Pools[node+"/rdma-vf"].Slices {
		for _, dev := range s.Devices {
			if len(dev.Taints) > 0 {
				tainted = append(tainted, dev.Name)
			}
		}
	}
	if len(published(res, node+"/rdma-vf")) != 24 || strings.Join(tainted, ",") != "pci-0000-18-00-1,pci-0000-18-00-2" {
		t.Fatalf("taints on: %d published, tainted %v", len(published(res, node+"/rdma-vf")), tainted)
	}
	desired := &resourceapi.ResourceSlice{Spec: resourceapi.ResourceSliceSpec{Devices: []resourceapi.Device{{Name: "pci-0000-18-00-1",
		Taints: []resourceapi.DeviceTaint{{Key: dra.TaintKey, Effect: resourceapi.DeviceTaintEffectNoSchedule}}}}}}
	actual := &resourceapi.ResourceSlice{Spec: resourceapi.ResourceSliceSpec{Devices: []resourceapi.Device{{Name: "pci-0000-18-00-1"}}}}
	d.HandleError(ctx, &resourceslice.DroppedFieldsError{PoolName: node + "/rdma-vf", DesiredSlice: desired, ActualSlice: actual}, "publishing")
	deadline := time.Now().Add(10 * time.Second)
	for d.ServerFeatures().Taints && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	// SetServerFeatures publishes under the driver's lock before
	// TaintUnhealthy can see the change: the last publication is the
	// rebuilt one.
	res, _ = rec.last()
	got := published(res, node+"/rdma-vf")
	if d.ServerFeatures().Taints || len(got) != 22 || got["pci-0000-18-00-1"] {
		t.Errorf("after the server dropped taints: taints %v, %d published (18:00.1 %v); want off, 22, left out", d.ServerFeatures().Taints, len(got), got["pci-0000-18-00-1"])
	}
}

// A prepared claim's VF that leaves the bus (its PF's VFs destroyed) is
// republished at the next rediscovery with a NoExecute taint (where the
// server keeps taints), so the device taint eviction controller evicts the
// pod holding it; once kubelet unprepares that claim the device leaves the
// slices at once, not at the next rediscovery.
func TestGoneDeviceIsTaintedNoExecuteUntilReleased(t *testing.T) {
	n := newNode(t, "dgx-h100", 2)
	d := n.driver(t)
	rec := record(t, d)
	ctx := context.Background()
	if err := d.SetServerFeatures(ctx, draplugin.ServerFeatures{Taints: true}); err != nil {
		t.Fatal(err)
	}
	const vf, name = "0000:18:00.1", "pci-0000-18-00-1"
	c := claim(t, uidA, nic(vf, "nic"))
	if res, err := d.PrepareResourceClaims(ctx, []*resourceapi.ResourceClaim{c}); err != nil || res[c.UID].Err != nil {
		t.Fatalf("prepare: %v %+v", err, res)
	}
	if err := os.Remove(filepath.Join(n.sysfs, "bus/pci/devices", vf)); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Update(ctx, n.topo(t)); err != nil {
		t.Fatal(err)
	}
	taints := func() ([]resourceapi.DeviceTaint, bool) {
		res, _ := rec.last()
		for _, s := range res.Pools[node+"/rdma-vf"].Slices {
			for _, dev := range s.Devices {
				if dev.Name == name {
					return dev.Taints, true
				}
			}
		}
		return nil, false
	}
	want := []resourceapi.DeviceTaint{{Key: dra.TaintKey, Value: "gone", Effect: resourceapi.DeviceTaintEffectNoExecute}}
	if got, ok := taints(); !ok || !slices.Equal(got, want) {
		t.Fatalf("gone while held: published %v, taints %+v; want %+v", ok, got, want)
	}
	if un, err := d.UnprepareResourceClaims(ctx, []kubeletplugin.NamespacedObject{{UID: c.UID}}); err != nil || un[c.UID] != nil {
		t.Fatalf("unprepare: %v %v", err, un)
	}
	if got, ok := taints(); ok {
		t.Errorf("released: %s still published, taints %+v", name, got)
	}
}
