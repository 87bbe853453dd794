package deviceplugin

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/railyard-io/railyard/internal/deviceplugin/kubelettest"

	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/railyard-io/railyard/api/config/v1alpha1"
	"github.com/railyard-io/railyard/internal/fakesysfs"
	"github.com/railyard-io/railyard/internal/podresources"
)

const resource = "railyard.io/rdma_vf"

var vfPool = v1alpha1.Pool{Name: resource, DeviceKind: "vf", Policy: "spread"}

// TestRegisterAndListAndWatchFollowTheTree runs the plugin over a generated
// roce-8gpu-4nic sysfs tree (4 PFs, 2 VFs each): it registers with the
// kubelet registration stub, and a real client's ListAndWatch stream
// follows VFs being added, a port going DOWN and ACTIVE again, and VFs
// being removed.
func TestRegisterAndListAndWatchFollowTheTree(t *testing.T) {
	n := newNode(t, "roce-8gpu-4nic", 2)
	reg := kubelettest.StartRegistrar(t, n.pluginDir)
	p := newPlugin(t, n, resource, "spread", nil)
	refresh(t, n, p, vfPool)
	runPlugin(t, p)

	req := reg.Wait(t)
	if req.Version != pluginapi.Version || req.ResourceName != resource || req.Endpoint != SocketName(resource) ||
		req.Options == nil || !req.Options.GetPreferredAllocationAvailable {
		t.Fatalf("register request = %+v", req)
	}
	c := dial(t, p)
	opts, err := c.GetDevicePluginOptions(context.Background(), &pluginapi.Empty{})
	if err != nil || !opts.GetPreferredAllocationAvailable {
		t.Fatalf("options = %+v, %v", opts, err)
	}
	w := kubelettest.Watch(t, c)
	first := w.Next(t, "8 healthy VFs", 10*time.Second, func(l []*pluginapi.Device) bool { return len(l) == 8 })
	for _, d := range first {
		if d.Health != pluginapi.Healthy || d.Topology == nil || len(d.Topology.Nodes) != 1 {
			t.Errorf("device %+v", d)
		}
	}
	numa := map[string]int64{}
	for _, d := range first {
		numa[d.ID] = d.Topology.Nodes[0].ID
	}
	if numa["0000:05:00.1"] != 0 || numa["0000:84:00.1"] != 1 {
		t.Errorf("NUMA nodes = %v", numa)
	}

	// A VF appears.
	if err := fakesysfs.AddVFs(n.sysfs, "0000:05:00.0", 1); err != nil {
		t.Fatal(err)
	}
	if !refresh(t, n, p, vfPool) {
		t.Fatal("Update did not report a change after a VF was added")
	}
	w.Next(t, "the new VF", 10*time.Second, func(l []*pluginapi.Device) bool { return len(l) == 9 && health(l)["0000:05:00.3"] == pluginapi.Healthy })

	// Port of PF 0000:05:00.0 (mlx5_0) DOWN: its 3 VFs are Unhealthy.
	if err := fakesysfs.SetPortState(n.sysfs, "mlx5_0", 1, fakesysfs.PortDown); err != nil {
		t.Fatal(err)
	}
	refresh(t, n, p, vfPool)
	l := w.Next(t, "VFs of 05:00.0 unhealthy", 10*time.Second, func(l []*pluginapi.Device) bool {
		return health(l)["0000:05:00.1"] == pluginapi.Unhealthy
	})
	for id, h := range health(l) {
		if want := strings.HasPrefix(id, "0000:05:00."); (h == pluginapi.Unhealthy) != want {
			t.Errorf("%s is %s after mlx5_0 went down", id, h)
		}
	}
	// And back.
	if err := fakesysfs.SetPortState(n.sysfs, "mlx5_0", 1, fakesysfs.PortActive); err != nil {
		t.Fatal(err)
	}
	refresh(t, n, p, vfPool)
	w.Next(t, "all healthy again", 10*time.Second, func(l []*pluginapi.Device) bool {
		for _, h := range health(l) {
			if h != pluginapi.Healthy {
				return false
			}
		}
		return len(l) == 9
	})
	// No change, no message: Update reports false.
	if refresh(t, n, p, vfPool) {
		t.Error("Update reported a change for an unchanged tree")
	}

	// VFs of 0c:00.0 removed: they stay listed, Unhealthy ("disappeared").
	if err := fakesysfs.RemoveVFs(n.sysfs, "0000:0c:00.0"); err != nil {
		t.Fatal(err)
	}
	refresh(t, n, p, vfPool)
	l = w.Next(t, "removed VFs unhealthy", 10*time.Second, func(l []*pluginapi.Device) bool {
		return health(l)["0000:0c:00.1"] == pluginapi.Unhealthy
	})
	if len(l) != 9 || health(l)["0000:0c:00.2"] != pluginapi.Unhealthy || health(l)["0000:05:00.1"] != pluginapi.Healthy {
		t.Errorf("after removal: %v", health(l))
	}
	if _, err := c.Allocate(context.Background(), &pluginapi.AllocateRequest{ContainerRequests: []*pluginapi.ContainerAllocateRequest{{DevicesIds: []string{"0000:0c:00.1"}}}}); err == nil {
		t.Error("Allocate of a vanished device succeeded")
	}
}

// TestVanishedDevicesAreDroppedAfterGrace uses a fake clock.
func TestVanishedDevicesAreDroppedAfterGrace(t *testing.T) {
	n := newNode(t, "roce-8gpu-4nic", 1)
	now := time.Unix(1000, 0)
	p := New(Config{Resource: resource, PluginDir: n.pluginDir, DevRoot: n.devRoot, VanishedGrace: time.Minute, Now: func() time.Time { return now }})
	refresh(t, n, p, vfPool)
	if err := fakesysfs.RemoveVFs(n.sysfs, "0000:8b:00.0"); err != nil {
		t.Fatal(err)
	}
	refresh(t, n, p, vfPool)
	if h := health(p.Devices()); len(h) != 4 || h["0000:8b:00.1"] != pluginapi.Unhealthy {
		t.Fatalf("just vanished: %v", h)
	}
	now = now.Add(59 * time.Second)
	refresh(t, n, p, vfPool)
	if len(p.Devices()) != 4 {
		t.Fatal("dropped before the grace period")
	}
	now = now.Add(2 * time.Second)
	refresh(t, n, p, vfPool)
	if h := health(p.Devices()); len(h) != 3 {
		t.Fatalf("after grace: %v", h)
	}
}

// TestReRegisterAfterKubeletRestart deletes and recreates kubelet.sock
// (and the plugin's socket, as kubelet's restart does) and checks that a
// Restart registers again on a fresh socket that serves.
func TestReRegisterAfterKubeletRestart(t *testing.T) {
	n := newNode(t, "roce-8gpu-4nic", 1)
	reg := kubelettest.StartRegistrar(t, n.pluginDir)
	p := newPlugin(t, n, resource, "spread", nil)
	refresh(t, n, p, vfPool)
	runPlugin(t, p)
	reg.Wait(t)

	reg.Stop()
	os.Remove(filepath.Join(n.pluginDir, KubeletSocket))
	os.Remove(p.SocketPath()) // kubelet wipes the directory when it starts
	reg2 := kubelettest.StartRegistrar(t, n.pluginDir)
	p.Restart()
	if req := reg2.Wait(t); req.ResourceName != resource {
		t.Fatalf("re-register = %+v", req)
	}
	w := kubelettest.Watch(t, dial(t, p))
	w.Next(t, "4 devices after re-registration", 10*time.Second, func(l []*pluginapi.Device) bool { return len(l) == 4 })
}

// TestRestartRequestAlreadyServedIsDropped: one kubelet restart sends the
// plugin two requests (its socket removed, kubelet.sock created); the one
// that arrives after the plugin registered with the new kubelet must not
// make it serve again, which would drop kubelet's fresh connection (seen as
// "connection refused" in CI). A request with nothing changed is dropped
// too.
func TestRestartRequestAlreadyServedIsDropped(t *testing.T) {
	n := newNode(t, "roce-8gpu-4nic", 1)
	reg := kubelettest.StartRegistrar(t, n.pluginDir)
	p := newPlugin(t, n, resource, "spread", nil)
	refresh(t, n, p, vfPool)
	runPlugin(t, p)
	reg.Wait(t)
	w := kubelettest.Watch(t, dial(t, p))
	w.Next(t, "4 devices", 5*time.Second, func(l []*pluginapi.Device) bool { return len(l) == 4 })
	p.Restart()
	p.Restart()
	reg.None(t, 300*time.Millisecond)
	w.Open(t, 100*time.Millisecond)

	reg.Stop()
	os.Remove(p.SocketPath())
	reg2 := kubelettest.StartRegistrar(t, n.pluginDir)
	p.Restart()
	reg2.Wait(t)
	w2 := kubelettest.Watch(t, dial(t, p))
	w2.Next(t, "4 devices after re-registration", 5*time.Second, func(l []*pluginapi.Device) bool { return len(l) == 4 })
	p.Restart() // the late second request of the same kubelet restart
	reg2.None(t, 300*time.Millisecond)
	w2.Open(t, 100*time.Millisecond)
}

// TestRegistrationRetriesUntilKubeletAppears starts the plugin before
// kubelet.sock exists.
func TestRegistrationRetriesUntilKubeletAppears(t *testing.T) {
	n := newNode(t, "roce-8gpu-4nic", 1)
	p := newPlugin(t, n, resource, "spread", nil)
	refresh(t, n, p, vfPool)
	runPlugin(t, p)
	time.Sleep(300 * time.Millisecond)
	reg := kubelettest.StartRegistrar(t, n.pluginDir)
	if req := reg.Wait(t); req.ResourceName != resource {
		t.Fatalf("register = %+v", req)
	}
}

// TestAllocateReturnsOnlyTheDevicesOwnNodes checks device specs, env vars,
// the device-info file and CDI names.
func TestAllocateReturnsOnlyTheDevicesOwnNodes(t *testing.T) {
	n := newNode(t, "roce-8gpu-4nic", 2)
	reg := kubelettest.StartRegistrar(t, n.pluginDir)
	p := newPlugin(t, n, resource, "spread", nil)
	p.cfg.CDIKind = "railyard.io/rdma"
	p.cfg.NCCL.CrossNIC = new(0)
	refresh(t, n, p, vfPool)
	runPlugin(t, p)
	reg.Wait(t)
	c := dial(t, p)

	ids := []string{"0000:05:00.1", "0000:84:00.2"}
	resp, err := c.Allocate(context.Background(), &pluginapi.AllocateRequest{ContainerRequests: []*pluginapi.ContainerAllocateRequest{{DevicesIds: ids}}})
	if err != nil {
		t.Fatal(err)
	}
	car := resp.ContainerResponses[0]
	snap := p.current()
	d0, d1 := snap.devs[ids[0]].dev, snap.devs[ids[1]].dev
	var got []string
	for _, s := range car.Devices {
		got = append(got, s.HostPath+"->"+s.ContainerPath+":"+s.Permissions)
	}
	want := []string{
		filepath.Join(n.devRoot, "infiniband", d0.Uverbs) + "->/dev/infiniband/" + d0.Uverbs + ":rw",
		filepath.Join(n.devRoot, "infiniband/rdma_cm") + "->/dev/infiniband/rdma_cm:rw",
		filepath.Join(n.devRoot, "infiniband", d1.Uverbs) + "->/dev/infiniband/" + d1.Uverbs + ":rw",
	}
	if !slices.Equal(got, want) {
		t.Errorf("device specs\n got %v\nwant %v", got, want)
	}
	if len(car.Mounts) != 0 {
		t.Errorf("mounts = %v", car.Mounts)
	}
	env := car.Envs
	if env["PCIDEVICE_RAILYARD_IO_RDMA_VF"] != "0000:05:00.1,0000:84:00.2" {
		t.Errorf("PCIDEVICE env = %q", env["PCIDEVICE_RAILYARD_IO_RDMA_VF"])
	}
	if env["NCCL_IB_HCA"] != "="+d0.RDMA+","+d1.RDMA {
		t.Errorf("NCCL_IB_HCA = %q", env["NCCL_IB_HCA"])
	}
	if v, ok := env["NCCL_CROSS_NIC"]; v != "0" || !ok {
		t.Errorf("NCCL_CROSS_NIC = %q (set %v), want the pool's 0", v, ok)
	}
	var info map[string]struct {
		Generic map[string]string `json:"generic"`
		RDMA    map[string]string `json:"rdma"`
	}
	if err := json.Unmarshal([]byte(env["PCIDEVICE_RAILYARD_IO_RDMA_VF_INFO"]), &info); err != nil {
		t.Fatalf("_INFO: %v", err)
	}
	if i := info[ids[0]]; i.Generic["deviceID"] != ids[0] || i.RDMA["uverbs"] != "/dev/infiniband/"+d0.Uverbs ||
		i.RDMA["rdma_cm"] != "/dev/infiniband/rdma_cm" || i.RDMA["rdma_dev"] != d0.RDMA {
		t.Errorf("_INFO[%s] = %+v", ids[0], i)
	}
	if len(car.CdiDevices) != 2 || car.CdiDevices[0].Name != "railyard.io/rdma=0000:05:00.1" {
		t.Errorf("CDI devices = %v", car.CdiDevices)
	}
	b, err := os.ReadFile(filepath.Join(n.devInfoDir, "railyard.io-rdma_vf-0000:05:00.1-device.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	pci, _ := doc["pci"].(map[string]any)
	if doc["type"] != "pci" || doc["version"] != "1.1.0" || pci["pci-address"] != ids[0] || pci["pf-pci-address"] != "0000:05:00.0" || pci["rdma-device"] != d0.RDMA {
		t.Errorf("devinfo = %s", b)
	}

	// Unknown device, and a device whose node is missing under dev root.
	if _, err := c.Allocate(context.Background(), &pluginapi.AllocateRequest{ContainerRequests: []*pluginapi.ContainerAllocateRequest{{DevicesIds: []string{"0000:ff:00.1"}}}}); err == nil {
		t.Error("unknown device allocated")
	}
	os.Remove(filepath.Join(n.devRoot, "infiniband", d1.Uverbs))
	if _, err := c.Allocate(context.Background(), &pluginapi.AllocateRequest{ContainerRequests: []*pluginapi.ContainerAllocateRequest{{DevicesIds: ids[1:]}}}); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Errorf("missing device node: err = %v", err)
	}
}

// fakeGPUs is a GPUFinder that returns fixed GPUs (the PodResources path
// itself is tested over real gRPC in the agent and podresources tests).
type fakeGPUs []string

func (f fakeGPUs) PodGPUs(context.Context, string) (podresources.Finding, error) {
	return podresources.Finding{GPUs: f, Container: "default/p/c"}, nil
}

func TestGetPreferredAllocation(t *testing.T) {
	n := newNode(t, "roce-8gpu-4nic", 2)
	reg := kubelettest.StartRegistrar(t, n.pluginDir)
	gpu := "0000:8a:00.0" // a GPU on NUMA 1
	p := newPlugin(t, n, resource, "gpu-aware", fakeGPUs{gpu})
	refresh(t, n, p, vfPool)
	runPlugin(t, p)
	reg.Wait(t)
	c := dial(t, p)
	snap := p.current()
	if _, ok := snap.topo.GPU(gpu); !ok {
		t.Fatalf("GPU %s not in the model: %v", gpu, snap.topo.GPUs)
	}
	rail, _ := snap.topo.Rail(gpu)

	all := make([]string, 0, 8)
	for _, d := range p.Devices() {
		all = append(all, d.ID)
	}
	ask := func(must []string, size int32) []string {
		t.Helper()
		resp, err := c.GetPreferredAllocation(context.Background(), &pluginapi.PreferredAllocationRequest{ContainerRequests: []*pluginapi.ContainerPreferredAllocationRequest{{
			AvailableDeviceIDs: all, MustIncludeDeviceIDs: must, AllocationSize: size}}})
		if err != nil {
			t.Fatal(err)
		}
		return resp.ContainerResponses[0].DeviceIDs
	}
	got := ask(nil, 1)
	if len(got) != 1 || snap.topo.Class(gpu, got[0]) != rail.Class {
		t.Errorf("gpu-aware chose %v (class %v), want a VF at the rail's class %v (rail NIC %s)", got, snap.topo.Class(gpu, got[0]), rail.Class, rail.NIC)
	}
	got = ask([]string{"0000:05:00.2"}, 3)
	if len(got) != 3 || !slices.Contains(got, "0000:05:00.2") {
		t.Errorf("must-include/size not honoured: %v", got)
	}
	if _, err := c.GetPreferredAllocation(context.Background(), &pluginapi.PreferredAllocationRequest{ContainerRequests: []*pluginapi.ContainerPreferredAllocationRequest{{
		AvailableDeviceIDs: all[:2], AllocationSize: 3}}}); err == nil {
		t.Error("size larger than available accepted")
	}
}

// TestAllocateFailsCleanlyAndRetries injects a failure at each step of
// Allocate (missing rdma_cm node, device-info directory not writable) and
// checks the error names the cause and that the same request succeeds once
// the cause is gone, with no temporary files left behind.
func TestAllocateFailsCleanlyAndRetries(t *testing.T) {
	n := newNode(t, "roce-8gpu-4nic", 1)
	blocker := filepath.Join(t.TempDir(), "not-a-dir")
	if err := os.WriteFile(blocker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	p := newPlugin(t, n, resource, "spread", nil)
	p.cfg.DevInfoDir = filepath.Join(blocker, "dp")
	refresh(t, n, p, vfPool)
	req := &pluginapi.AllocateRequest{ContainerRequests: []*pluginapi.ContainerAllocateRequest{{DevicesIds: []string{"0000:05:00.1"}}}}

	rdmaCM := filepath.Join(n.devRoot, "infiniband", "rdma_cm")
	if err := os.Rename(rdmaCM, rdmaCM+".away"); err != nil {
		t.Fatal(err)
	}
	if _, err := p.allocate(context.Background(), req); err == nil || !strings.Contains(err.Error(), "rdma_cm is missing") {
		t.Fatalf("missing rdma_cm: %v", err)
	}
	if err := os.Rename(rdmaCM+".away", rdmaCM); err != nil {
		t.Fatal(err)
	}
	if _, err := p.allocate(context.Background(), req); err == nil || !strings.Contains(err.Error(), "device info") {
		t.Fatalf("unwritable devinfo dir: %v", err)
	}
	dir := filepath.Join(t.TempDir(), "dp")
	p.cfg.DevInfoDir = dir
	resp, err := p.allocate(context.Background(), req)
	if err != nil || len(resp.ContainerResponses[0].Devices) != 2 {
		t.Fatalf("retry: %v %v", resp, err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 || !strings.HasSuffix(entries[0].Name(), "-0000:05:00.1-device.json") {
		t.Errorf("devinfo dir holds %v", entries)
	}
}

// countingGPUs is a GPUFinder stand-in that counts its calls and knows no
// GPUs.
type countingGPUs struct{ calls atomic.Int32 }

func (c *countingGPUs) PodGPUs(context.Context, string) (podresources.Finding, error) {
	c.calls.Add(1)
	return podresources.Finding{Note: "no container holds GPUs"}, nil
}

// TestPodResourcesAskedOnlyForPoliciesThatNeedGPUs: the plugin asks
// PodResources for the pod's GPUs only when the pool's policy declares it
// needs them.
func TestPodResourcesAskedOnlyForPoliciesThatNeedGPUs(t *testing.T) {
	for policy, wantCalls := range map[string]int32{"spread": 0, "packed": 0, "gpu-aware": 1, "numa": 1} {
		t.Run(policy, func(t *testing.T) {
			n := newNode(t, "roce-8gpu-4nic", 2)
			reg := kubelettest.StartRegistrar(t, n.pluginDir)
			finder := &countingGPUs{}
			p := newPlugin(t, n, resource, policy, finder)
			refresh(t, n, p, vfPool)
			runPlugin(t, p)
			reg.Wait(t)
			var all []string
			for _, d := range p.Devices() {
				all = append(all, d.ID)
			}
			resp, err := dial(t, p).GetPreferredAllocation(context.Background(), &pluginapi.PreferredAllocationRequest{ContainerRequests: []*pluginapi.ContainerPreferredAllocationRequest{{
				AvailableDeviceIDs: all, AllocationSize: 2}}})
			if err != nil || len(resp.ContainerResponses[0].DeviceIDs) != 2 {
				t.Fatalf("GetPreferredAllocation: %v %v", resp, err)
			}
			if got := finder.calls.Load(); got != wantCalls {
				t.Errorf("PodResources asked %d times, want %d", got, wantCalls)
			}
		})
	}
}
