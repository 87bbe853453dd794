//go:build e2e

package multinode

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/railyard-io/railyard/internal/dra"
	"github.com/railyard-io/railyard/test/e2e/framework"
)

// TestDRAGoneNICEvictsItsPod: a pod on gpu-1 holds rail 0's NIC (the
// chart's rail-0 pool delivered by DRA) through a claim; then the NIC's PCI
// function leaves gpu-1's bus (its bus/pci/devices entry removed from the
// node's generated tree, as a surprise removal or a destroyed VF does), so
// the pod cannot work. On 1.37 the agent republishes the NIC with the
// NoExecute taint rdma.railyard.io/unhealthy=gone, the real device taint
// eviction controller of kube-controller-manager evicts the pod, and once
// kubelet released the claim the NIC leaves the slices. On 1.35 (device
// taints off) the NIC is left out of the slices and the pod keeps running,
// as docs/dra.md says.
func TestDRAGoneNICEvictsItsPod(t *testing.T) {
	c := mc(t)
	ctx := framework.Context(t, 5*time.Minute)
	gpus := c.Info.GPUNodes()
	name := string(railPool(0))
	installDRAChart(ctx, t, c, onlyPool(name))
	claimTemplate(ctx, t, c, "rail0-nic", dra.PoolDeviceClass(name).Name)
	pod := runPod(ctx, t, c, claimPod("holder", gpus[0].Name, "rail0-nic"))
	device := podClaim(ctx, t, c, pod).Status.Allocation.Devices.Results[0].Device
	pool, err := dra.PoolName(gpus[0].Name, name)
	if err != nil {
		t.Fatal(err)
	}
	var pci string
	for _, d := range poolDevices(ctx, t, c, pool) {
		if a := d.Attributes[dra.AttrPCIBusID]; d.Name == device && a.StringValue != nil {
			pci = *a.StringValue
		}
	}
	if pci == "" {
		t.Fatalf("device %s of the pod's claim is not in pool %s", device, pool)
	}
	published := func(ctx context.Context) (bool, []resourceapi.DeviceTaint) {
		for _, d := range poolDevices(ctx, t, c, pool) {
			if d.Name == device {
				return true, d.Taints
			}
		}
		return false, nil
	}

	t.Cleanup(func() {
		if t.Failed() {
			logAgent(t, c, gpus[0].Name)
		}
	})
	link := filepath.Join(gpus[0].Dir, "machine", "sysfs", "bus", "pci", "devices", pci)
	target, err := os.Readlink(link)
	if err != nil {
		t.Fatal(err)
	}
	// Watches from before the removal: the tainted device and the evicted
	// pod may last less than a poll (the eviction took 4 s on 1.37).
	events := make(chan watch.Event, 100)
	watchCtx, stopWatches := context.WithCancel(ctx)
	defer stopWatches()
	follow(watchCtx, events, func(ctx context.Context) (watch.Interface, error) {
		return c.Client.ResourceV1().ResourceSlices().Watch(ctx, metav1.ListOptions{FieldSelector: resourceapi.ResourceSliceSelectorNodeName + "=" + gpus[0].Name})
	})
	follow(watchCtx, events, func(ctx context.Context) (watch.Interface, error) {
		return c.Client.CoreV1().Pods("default").Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + pod.Name})
	})
	if err := os.Remove(link); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := os.Symlink(target, link); err != nil {
			t.Errorf("putting %s back on the bus: %v", pci, err)
		}
	})
	removed := time.Now()

	if minorOf(release) < minorOf("1.37") {
		poll(ctx, t, fmt.Sprintf("%s (%s) left out of pool %s", device, pci, pool), func(ctx context.Context) (bool, string) {
			found, taints := published(ctx)
			return !found, fmt.Sprintf("published %v, taints %+v", found, taints)
		})
		time.Sleep(5 * time.Second) // an eviction would have begun by now (4 s on 1.37)
		p, err := c.Client.CoreV1().Pods("default").Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil || p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning {
			t.Fatalf("Kubernetes %s (no device taints): the pod holding a gone NIC should keep running: %v %+v", release, err, p)
		}
		t.Logf("Kubernetes %s: %s gone -> left out of the slice in %v; the pod keeps running", release, device, time.Since(removed).Round(10*time.Millisecond))
		return
	}
	want := resourceapi.DeviceTaint{Key: dra.TaintKey, Value: "gone", Effect: resourceapi.DeviceTaintEffectNoExecute}
	var tainted, evicted, deleted time.Duration
	var disruption string
	for tainted == 0 || deleted == 0 {
		select {
		case <-ctx.Done():
			t.Fatalf("after %s left the bus: tainted after %v, evicted after %v (%s), deleted after %v; want all three", pci, tainted, evicted, disruption, deleted)
		case ev := <-events:
			if sl, isSlice := ev.Object.(*resourceapi.ResourceSlice); isSlice && sl.Spec.Pool.Name == pool && tainted == 0 {
				for _, d := range sl.Spec.Devices {
					if d.Name == device && len(d.Taints) == 1 && d.Taints[0].Key == want.Key && d.Taints[0].Value == want.Value && d.Taints[0].Effect == want.Effect {
						tainted = time.Since(removed)
					}
				}
			}
			p, isPod := ev.Object.(*corev1.Pod)
			if !isPod {
				continue
			}
			for _, cond := range p.Status.Conditions {
				if cond.Type == corev1.DisruptionTarget && cond.Status == corev1.ConditionTrue && evicted == 0 {
					evicted, disruption = time.Since(removed), cond.Reason+": "+cond.Message
				}
			}
			if ev.Type == watch.Deleted {
				deleted = time.Since(removed)
			}
		}
	}
	if !strings.Contains(disruption, "DeviceTaint") {
		t.Errorf("the pod went without the device taint eviction controller's DisruptionTarget condition (got %q)", disruption)
	}
	poll(ctx, t, fmt.Sprintf("%s out of the slices once its claim is released", device), func(ctx context.Context) (bool, string) {
		found, taints := published(ctx)
		return !found, fmt.Sprintf("published %v, taints %+v", found, taints)
	})
	t.Logf("Kubernetes %s: %s gone -> tainted NoExecute after %v, its pod evicted after %v (%s) and deleted after %v, the device out of the slices after %v",
		release, device, tainted.Round(10*time.Millisecond), evicted.Round(10*time.Millisecond), disruption, deleted.Round(10*time.Millisecond), time.Since(removed).Round(10*time.Millisecond))
}

// follow sends the events of the watches open makes to events until ctx
// ends, watching again whenever a watch ends (the test client's request
// timeout ends each).
func follow(ctx context.Context, events chan<- watch.Event, open func(context.Context) (watch.Interface, error)) {
	go func() {
		for ctx.Err() == nil {
			w, err := open(ctx)
			if err != nil {
				time.Sleep(100 * time.Millisecond)
				continue
			}
			for ev := range w.ResultChan() {
				select {
				case events <- ev:
				case <-ctx.Done():
					w.Stop()
					return
				}
			}
		}
	}()
}

// logAgent logs the last lines of the DRA release's agent on node.
func logAgent(t *testing.T, c *framework.MultiCluster, node string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pods, err := c.Client.CoreV1().Pods(draNS).List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + node})
	if err != nil {
		t.Logf("agent logs: %v", err)
		return
	}
	if list, err := c.Client.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{FieldSelector: resourceapi.ResourceSliceSelectorNodeName + "=" + node}); err == nil {
		for _, sl := range list.Items {
			var devs []string
			for _, d := range sl.Spec.Devices {
				devs = append(devs, fmt.Sprintf("%s%v", d.Name, d.Taints))
			}
			t.Logf("slice %s pool %s gen %d: %v", sl.Name, sl.Spec.Pool.Name, sl.Spec.Pool.Generation, devs)
		}
	}
	tail := int64(200)
	for _, p := range pods.Items {
		for _, ct := range p.Spec.Containers {
			b, err := c.Client.CoreV1().Pods(draNS).GetLogs(p.Name, &corev1.PodLogOptions{Container: ct.Name, TailLines: &tail}).DoRaw(ctx)
			t.Logf("pod %s container %s (%v):\n%s", p.Name, ct.Name, err, b)
		}
	}
}
