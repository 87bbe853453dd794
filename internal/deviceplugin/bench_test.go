package deviceplugin

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/railyard-io/railyard/internal/deviceplugin/kubelettest"
	"github.com/railyard-io/railyard/internal/podresources/podlist"
	"github.com/railyard-io/railyard/internal/podresources/podrestest"

	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
	podresourcesapi "k8s.io/kubelet/pkg/apis/podresources/v1"

	"github.com/railyard-io/railyard/api/config/v1alpha1"
	"github.com/railyard-io/railyard/internal/fakesysfs"
	"github.com/railyard-io/railyard/internal/podresources"
)

// bigNode generates the 2048-VF tree and its device-node stand-ins.
func bigNode(b *testing.B) *node {
	b.Helper()
	d, err := fakesysfs.DualRailNode()
	if err != nil {
		b.Fatal(err)
	}
	sys, err := fakesysfs.MkdirTemp()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = fakesysfs.Cleanup(sys) })
	if err := fakesysfs.Generate(sys, d, fakesysfs.Options{VFsPerPF: 128}); err != nil {
		b.Fatal(err)
	}
	n := &node{sysfs: sys, devRoot: b.TempDir(), pluginDir: shortTempDir(b), devInfoDir: filepath.Join(b.TempDir(), "dp")}
	n.makeDevNodes(b)
	return n
}

// latencies runs f b.N times and reports p50 and p99 in microseconds;
// prep (may be nil) runs untimed before each call.
func latencies(b *testing.B, prep func(i int), f func(i int) error) {
	b.Helper()
	var samples []time.Duration
	i := 0
	for b.Loop() {
		if prep != nil {
			b.StopTimer()
			prep(i)
			b.StartTimer()
		}
		start := time.Now()
		if err := f(i); err != nil {
			b.Fatal(err)
		}
		samples = append(samples, time.Since(start))
		i++
	}
	slices.Sort(samples)
	pct := func(q float64) float64 {
		return float64(samples[min(len(samples)-1, int(q*float64(len(samples))))].Nanoseconds()) / 1e3
	}
	b.ReportMetric(pct(0.50), "p50-us")
	b.ReportMetric(pct(0.99), "p99-us")
}

func servedBigPool(b *testing.B, policy string, gpus GPUFinder, devInfoDir string) (*Plugin, pluginapi.DevicePluginClient, []string) {
	n := bigNode(b)
	n.devInfoDir = devInfoDir
	kubelettest.StartRegistrar(b, n.pluginDir)
	p := newPlugin(b, n, resource, policy, gpus)
	p.cfg.Log = slog.New(slog.DiscardHandler) // not the test log: benchmarks stay quiet
	refresh(b, n, p, v1alpha1.Pool{Name: resource, DeviceKind: "vf"})
	runPlugin(b, p)
	ids := make([]string, 0, 2048)
	for _, d := range p.Devices() {
		ids = append(ids, d.ID)
	}
	if len(ids) != 2048 {
		b.Fatalf("%d devices, want 2048", len(ids))
	}
	c := dial(b, p)
	// Wait until the socket serves.
	for deadline := time.Now().Add(10 * time.Second); ; {
		if _, err := c.GetDevicePluginOptions(context.Background(), &pluginapi.Empty{}); err == nil {
			break
		} else if time.Now().After(deadline) {
			b.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return p, c, ids
}

// BenchmarkAllocate2048 measures Allocate of one VF (device nodes, env,
// _INFO JSON and the device-info file written) through a real gRPC client
// on the unix socket, with 2048 VFs in the pool. Goal: p99 < 1 ms.
//
// Sub-benchmarks: devinfo files on tmpfs (/dev/shm, like /run on a node)
// or on this machine's ext4 /tmp; first allocation of each device (the
// device-info file is written) or repeated ones (the file is already right).
func BenchmarkAllocate2048(b *testing.B) {
	for _, fs := range []struct{ name, base string }{{"tmpfs", "/dev/shm"}, {"ext4", os.TempDir()}} {
		for _, repeat := range []bool{false, true} {
			name := fs.name + "-first"
			if repeat {
				name = fs.name + "-repeat"
			}
			b.Run(name, func(b *testing.B) {
				dir, err := os.MkdirTemp(fs.base, "rydevinfo")
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { os.RemoveAll(dir) })
				_, c, ids := servedBigPool(b, "spread", nil, dir)
				ctx := context.Background()
				prep := func(i int) {
					if !repeat && i > 0 && i%len(ids) == 0 {
						os.RemoveAll(dir) // every device's file is new again
					}
				}
				latencies(b, prep, func(i int) error {
					id := ids[0]
					if !repeat {
						id = ids[i%len(ids)]
					}
					_, err := c.Allocate(ctx, &pluginapi.AllocateRequest{ContainerRequests: []*pluginapi.ContainerAllocateRequest{{DevicesIds: []string{id}}}})
					return err
				})
			})
		}
	}
}

// BenchmarkGetPreferredAllocation2048 measures one decision over 2048
// available VFs for an 8-device request through a real gRPC client, per
// policy. gpu-aware-podresources also lists pods through a real gRPC
// PodResources server (100 pods) and maps 8 GPU UUIDs with the GPU map.
// Goal: p99 < 1 ms.
func BenchmarkGetPreferredAllocation2048(b *testing.B) {
	gpus := []string{"0000:12:00.0", "0000:22:00.0", "0000:32:00.0", "0000:42:00.0", "0000:92:00.0", "0000:a2:00.0", "0000:b2:00.0", "0000:c2:00.0"}
	cases := []struct {
		name, policy string
		finder       func(b *testing.B) GPUFinder
	}{
		{"spread", "spread", nil},
		{"packed", "packed", nil},
		{"gpu-aware-known-gpus", "gpu-aware", func(*testing.B) GPUFinder { return fakeGPUs(gpus) }},
		{"gpu-aware-podresources", "gpu-aware", func(b *testing.B) GPUFinder { return podResourcesFinder(b, gpus) }},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			var f GPUFinder
			if tc.finder != nil {
				f = tc.finder(b)
			}
			p, c, ids := servedBigPool(b, tc.policy, f, "")
			req := &pluginapi.PreferredAllocationRequest{ContainerRequests: []*pluginapi.ContainerPreferredAllocationRequest{{AvailableDeviceIDs: ids, AllocationSize: 8}}}
			resp, err := c.GetPreferredAllocation(context.Background(), req)
			if err != nil || len(resp.ContainerResponses[0].DeviceIDs) != 8 {
				b.Fatalf("%v %v", resp, err)
			}
			if tc.policy == "gpu-aware" {
				for _, d := range resp.ContainerResponses[0].DeviceIDs {
					if cl := classes(p.current().topo, gpus, []string{d})[0].String(); cl != "PIX" {
						b.Fatalf("gpu-aware chose %s at %s", d, cl)
					}
				}
			}
			latencies(b, nil, func(int) error {
				_, err := c.GetPreferredAllocation(context.Background(), req)
				return err
			})
		})
	}
}

// podResourcesFinder serves 99 running pods holding a GPU and a VF each,
// plus the admitted pod holding 8 GPUs and no VF, over real gRPC.
func podResourcesFinder(b *testing.B, gpus []string) GPUFinder {
	resp := &podresourcesapi.ListPodResourcesResponse{}
	gpuMap := podresources.Map{}
	for i := 0; i < 99; i++ {
		resp.PodResources = append(resp.PodResources, &podresourcesapi.PodResources{Name: fmt.Sprintf("p%d", i), Namespace: "default",
			Containers: []*podresourcesapi.ContainerResources{{Name: "c", Devices: []*podresourcesapi.ContainerDevices{
				{ResourceName: "nvidia.com/gpu", DeviceIds: []string{fmt.Sprintf("GPU-old-%d", i)}},
				{ResourceName: resource, DeviceIds: []string{"0000:00:00.0"}}}}}})
	}
	var uuids []string
	for i, g := range gpus {
		u := fmt.Sprintf("GPU-%08d", i)
		gpuMap[u] = g
		uuids = append(uuids, u)
	}
	resp.PodResources = append(resp.PodResources, &podresourcesapi.PodResources{Name: "admitted", Namespace: "default",
		Containers: []*podresourcesapi.ContainerResources{{Name: "c", Devices: []*podresourcesapi.ContainerDevices{{ResourceName: "nvidia.com/gpu", DeviceIds: uuids}}}}})
	srv := podrestest.Start(b, "")
	srv.Set(resp.PodResources...)
	client := podlist.New(srv.Socket)
	b.Cleanup(client.Close)
	return podresources.NewFinder(client, gpuMap, []string{"nvidia.com/gpu"})
}

// BenchmarkPreferredInProcess2048 is GetPreferredAllocation without gRPC
// (no protobuf decoding of the 2048 IDs): the plugin's and policy's share.
func BenchmarkPreferredInProcess2048(b *testing.B) {
	gpus := []string{"0000:12:00.0", "0000:22:00.0", "0000:32:00.0", "0000:42:00.0", "0000:92:00.0", "0000:a2:00.0", "0000:b2:00.0", "0000:c2:00.0"}
	for _, policy := range []string{"spread", "gpu-aware"} {
		b.Run(policy, func(b *testing.B) {
			p, _, ids := servedBigPool(b, policy, fakeGPUs(gpus), "")
			req := &pluginapi.PreferredAllocationRequest{ContainerRequests: []*pluginapi.ContainerPreferredAllocationRequest{{AvailableDeviceIDs: ids, AllocationSize: 8}}}
			latencies(b, nil, func(int) error {
				_, err := p.preferred(context.Background(), req)
				return err
			})
		})
	}
}
