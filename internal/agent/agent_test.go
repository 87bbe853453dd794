package agent

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/railyard-io/railyard/internal/deviceplugin/kubelettest"
	"github.com/railyard-io/railyard/internal/podresources/podrestest"

	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
	podresourcesapi "k8s.io/kubelet/pkg/apis/podresources/v1"

	"github.com/railyard-io/railyard/internal/deviceplugin"
	"github.com/railyard-io/railyard/internal/fakesysfs"
)

const (
	vfRes = "railyard.io/rdma_vf"
	pfRes = "railyard.io/rdma_pf"
)

// twoPools serves the VFs of three RoCE PFs (gpu-aware) and the fourth PF
// whole (packed) on the roce-8gpu-4nic model.
func twoPools(gpuMap string) string {
	return `apiVersion: railyard.io/v1alpha1
kind: AgentConfig
gpuMap: ` + gpuMap + `
resyncInterval: 1h
pools:
- name: railyard.io/rdma_vf
  deviceKind: vf
  policy: gpu-aware
  selectors:
    pfNames: [enp5s0f0np0, enp12s0f0np0, "enp139s0f0np0#0-7"]
    linkLayers: [Ethernet]
    rdmaCapable: true
- name: railyard.io/rdma_pf
  deviceKind: pf
  policy: packed
  selectors:
    pfNames: [enp132s0f0np0]
`
}

func httpGet(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestAgentOnGeneratedTree runs the whole agent, as main does, on a
// generated roce-8gpu-4nic sysfs tree (2 VFs per PF). Faked: kubelet's
// Registration service (a stub recording requests), kubelet's PodResources
// (a real gRPC server with set answers), the char devices (regular files
// under --dev-root). The resync interval is 1h, so every change below is
// picked up by the file watches alone.
func TestAgentOnGeneratedTree(t *testing.T) {
	e := newEnv(t, "roce-8gpu-4nic", 2)
	reg := kubelettest.StartRegistrar(t, e.pluginDir)
	pr := podrestest.Start(t, e.podSock)
	gpuMap := filepath.Join(e.dir, "gpus.csv")
	if err := os.WriteFile(gpuMap, []byte("GPU-1111, 00000000:8A:00.0\nGPU-2222, 00000000:06:00.0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := start(t, e.args(e.writeConfig(t, twoPools(gpuMap))), nil)
	reg.WaitAll(t, vfRes, pfRes)

	vf := dial(t, filepath.Join(e.pluginDir, deviceplugin.SocketName(vfRes)))
	pf := dial(t, filepath.Join(e.pluginDir, deviceplugin.SocketName(pfRes)))
	vfs := watch(t, vf)
	h := vfs.next(t, "6 VFs", 5*time.Second, func(h map[string]string) bool { return len(h) == 6 })
	if _, ok := h["0000:84:00.1"]; ok {
		t.Errorf("VF of the PF pool's NIC in the VF pool: %v", h)
	}
	pfs := watch(t, pf)
	pfs.next(t, "the whole PF", 5*time.Second, func(h map[string]string) bool { return len(h) == 1 && h["0000:84:00.0"] == pluginapi.Healthy })

	// A VF appears on enp139s0f0np0: advertised without a resync.
	began := time.Now()
	if err := fakesysfs.AddVFs(e.sysfs, "0000:8b:00.0", 1); err != nil {
		t.Fatal(err)
	}
	vfs.next(t, "the new VF", 2*time.Second, func(h map[string]string) bool { return h["0000:8b:00.3"] == pluginapi.Healthy })
	t.Logf("VF created -> advertised in %s", time.Since(began))

	// Port of mlx5_0 (PF 05:00.0) DOWN, then ACTIVE again.
	if err := fakesysfs.SetPortState(e.sysfs, "mlx5_0", 1, fakesysfs.PortDown); err != nil {
		t.Fatal(err)
	}
	vfs.next(t, "05:00.x unhealthy", 5*time.Second, func(h map[string]string) bool {
		return h["0000:05:00.1"] == pluginapi.Unhealthy && h["0000:05:00.2"] == pluginapi.Unhealthy && h["0000:0c:00.1"] == pluginapi.Healthy
	})
	if err := fakesysfs.SetPortState(e.sysfs, "mlx5_0", 1, fakesysfs.PortActive); err != nil {
		t.Fatal(err)
	}
	vfs.next(t, "05:00.x healthy", 5*time.Second, func(h map[string]string) bool {
		return h["0000:05:00.1"] == pluginapi.Healthy && h["0000:05:00.2"] == pluginapi.Healthy
	})

	// gpu-aware: the admitted pod holds GPU-1111 (0000:8a:00.0, PIX to
	// 8b:00.0) and no VF yet.
	available := []string{"0000:05:00.1", "0000:05:00.2", "0000:0c:00.1", "0000:0c:00.2", "0000:8b:00.1", "0000:8b:00.2", "0000:8b:00.3"}
	pr.Set(&podresourcesapi.PodResources{Name: "trainer", Namespace: "ml", Containers: []*podresourcesapi.ContainerResources{{
		Name: "main", Devices: []*podresourcesapi.ContainerDevices{{ResourceName: "nvidia.com/gpu", DeviceIds: []string{"GPU-1111"}}}}}})
	resp, err := vf.GetPreferredAllocation(context.Background(), &pluginapi.PreferredAllocationRequest{ContainerRequests: []*pluginapi.ContainerPreferredAllocationRequest{{
		AvailableDeviceIDs: available, AllocationSize: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	got := resp.ContainerResponses[0].DeviceIDs
	topo := r.agent.Topology()
	if len(got) != 1 || !strings.HasPrefix(got[0], "0000:8b:00.") || topo.Class("0000:8a:00.0", got[0]).String() != "PIX" {
		t.Errorf("gpu-aware chose %v for GPU 0000:8a:00.0", got)
	}
	// Must-include and size are honoured.
	resp, err = vf.GetPreferredAllocation(context.Background(), &pluginapi.PreferredAllocationRequest{ContainerRequests: []*pluginapi.ContainerPreferredAllocationRequest{{
		AvailableDeviceIDs: available, MustIncludeDeviceIDs: []string{"0000:0c:00.2"}, AllocationSize: 2}}})
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.ContainerResponses[0].DeviceIDs; len(got) != 2 || !slices.Contains(got, "0000:0c:00.2") {
		t.Errorf("must-include: %v", got)
	}
	// No pod holds GPUs: gpu-aware falls back to spread and says so.
	pr.Set()
	resp, err = vf.GetPreferredAllocation(context.Background(), &pluginapi.PreferredAllocationRequest{ContainerRequests: []*pluginapi.ContainerPreferredAllocationRequest{{
		AvailableDeviceIDs: available, AllocationSize: 3}}})
	if err != nil || len(resp.ContainerResponses[0].DeviceIDs) != 3 {
		t.Fatalf("fallback: %v %v", resp, err)
	}
	if !strings.Contains(r.log.String(), `msg="policy fell back" resource=railyard.io/rdma_vf policy=gpu-aware decided=spread`) {
		t.Error("fallback to spread not logged")
	}

	// Allocate of the PF.
	ar, err := pf.Allocate(context.Background(), &pluginapi.AllocateRequest{ContainerRequests: []*pluginapi.ContainerAllocateRequest{{DevicesIds: []string{"0000:84:00.0"}}}})
	if err != nil {
		t.Fatal(err)
	}
	car := ar.ContainerResponses[0]
	if car.Envs["PCIDEVICE_RAILYARD_IO_RDMA_PF"] != "0000:84:00.0" || car.Envs["NCCL_IB_HCA"] != "=mlx5_2" || len(car.Devices) != 2 {
		t.Errorf("PF allocate: %+v", car)
	}
	if _, err := os.Stat(filepath.Join(e.devInfo, "railyard.io-rdma_pf-0000:84:00.0-device.json")); err != nil {
		t.Errorf("devinfo file: %v", err)
	}

	// Kubelet restarts: kubelet.sock and every plugin socket are removed,
	// a new kubelet.sock appears; both pools register again.
	reg.Stop()
	entries, _ := os.ReadDir(e.pluginDir)
	for _, en := range entries {
		os.Remove(filepath.Join(e.pluginDir, en.Name()))
	}
	reg2 := kubelettest.StartRegistrar(t, e.pluginDir)
	reg2.WaitAll(t, vfRes, pfRes)
	vf2 := watch(t, dial(t, filepath.Join(e.pluginDir, deviceplugin.SocketName(vfRes))))
	vf2.next(t, "7 VFs after kubelet restart", 5*time.Second, func(h map[string]string) bool { return len(h) == 7 })

	// /healthz and /metrics.
	base := "http://" + r.metrics.String()
	if code, body := httpGet(t, base+"/healthz"); code != 200 || strings.TrimSpace(body) != "ok" {
		t.Errorf("/healthz = %d %q", code, body)
	}
	wants := []string{
		`railyard_pool_devices{health="Healthy",resource="railyard.io/rdma_vf"} 7`,
		`railyard_pool_devices{health="Healthy",resource="railyard.io/rdma_pf"} 1`,
		`railyard_plugin_registered{resource="railyard.io/rdma_vf"} 1`,
		`railyard_preferred_allocations_total{policy="gpu-aware",resource="railyard.io/rdma_vf"} 2`,
		`railyard_preferred_allocations_total{policy="spread",resource="railyard.io/rdma_vf"} 1`,
		`railyard_preferred_devices_total{class="PIX",policy="gpu-aware",resource="railyard.io/rdma_vf"}`,
		`railyard_allocated_devices_total{resource="railyard.io/rdma_pf"} 1`,
		`railyard_rpc_duration_seconds_count{code="OK",method="Allocate",resource="railyard.io/rdma_pf"} 1`,
		`railyard_rpc_duration_seconds_count{code="OK",method="GetPreferredAllocation",resource="railyard.io/rdma_vf"} 3`,
		`railyard_kubelet_restarts_total 1`,
	}
	// The registered gauge is set just after kubelet has answered Register,
	// a moment after the registrar saw the request: read until it settles.
	var missing []string
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		_, metrics := httpGet(t, base+"/metrics")
		missing = missing[:0]
		for _, want := range wants {
			if !strings.Contains(metrics, want) {
				missing = append(missing, want)
			}
		}
		if len(missing) == 0 || time.Now().After(deadline) {
			break
		}
	}
	for _, want := range missing {
		t.Errorf("/metrics lacks %s", want)
	}
}

// TestAgentRestartKeepsDeviceIDs stops the agent and starts a new one on
// the same tree: the advertised IDs are the same.
func TestAgentRestartKeepsDeviceIDs(t *testing.T) {
	e := newEnv(t, "roce-8gpu-4nic", 3)
	reg := kubelettest.StartRegistrar(t, e.pluginDir)
	podrestest.Start(t, e.podSock)
	cfg := e.writeConfig(t, twoPools(`""`))
	ids := func() []string {
		reg.WaitAll(t, vfRes, pfRes)
		h := watch(t, dial(t, filepath.Join(e.pluginDir, deviceplugin.SocketName(vfRes)))).next(t, "VFs", 5*time.Second, func(h map[string]string) bool { return len(h) > 0 })
		var out []string
		for id := range h {
			out = append(out, id)
		}
		slices.Sort(out)
		return out
	}
	r1 := start(t, e.args(cfg), nil)
	first := ids()
	r1.stop()
	start(t, e.args(cfg), nil)
	second := ids()
	if len(first) != 9 || !slices.Equal(first, second) {
		t.Fatalf("IDs changed across restart:\n%v\n%v", first, second)
	}
}

// TestBadConfigFailsWithEveryError starts the agent with a bad file.
func TestBadConfigFailsWithEveryError(t *testing.T) {
	e := newEnv(t, "roce-8gpu-4nic", 0)
	cfg := e.writeConfig(t, `apiVersion: railyard.io/v1alpha1
kind: AgentConfig
pools:
- name: nodomain
  policy: closest
  selectors: {pfNames: ["x#9-1"], numaNodes: [-2]}
`)
	err := run(context.Background(), e.args(cfg), func(string) (string, bool) { return "", false }, testStreams(), nil, nil)
	if err == nil {
		t.Fatal("bad config accepted")
	}
	for _, want := range []string{"pools[0].name", "pools[0].policy", "pools[0].selectors.pfNames[0]", "pools[0].selectors.numaNodes[0]"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %s:\n%v", want, err)
		}
	}
}

// TestWaitsQuietlyForKubelet starts the agent before kubelet.sock exists:
// it retries about once a second (no busy loop) and registers as soon as
// kubelet.sock appears (its creation prompts it).
func TestWaitsQuietlyForKubelet(t *testing.T) {
	e := newEnv(t, "roce-8gpu-4nic", 1)
	podrestest.Start(t, e.podSock)
	r := start(t, e.args(e.writeConfig(t, twoPools(`""`))), nil)
	time.Sleep(1500 * time.Millisecond)
	if n := strings.Count(r.log.String(), "device plugin server stopped"); n > 6 {
		t.Fatalf("%d failed attempts in 1.5s for 2 pools: busy loop\n%s", n, r.log)
	}
	began := time.Now()
	reg := kubelettest.StartRegistrar(t, e.pluginDir)
	reg.WaitAll(t, vfRes, pfRes)
	t.Logf("registered %s after kubelet.sock appeared", time.Since(began))
	// Prompt means prompted by kubelet.sock's creation (fsnotify), not by
	// the 1 s retry: the mechanism is checked, not a time a loaded
	// machine can miss.
	if !strings.Contains(r.log.String(), "kubelet.sock recreated") {
		t.Errorf("registration was not prompted by kubelet.sock's creation:\n%s", r.log)
	}
}
