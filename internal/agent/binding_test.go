package agent

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
	podresourcesapi "k8s.io/kubelet/pkg/apis/podresources/v1"

	"github.com/railyard-io/railyard/internal/binding"
	"github.com/railyard-io/railyard/internal/deviceplugin"
	"github.com/railyard-io/railyard/internal/deviceplugin/kubelettest"
	"github.com/railyard-io/railyard/internal/fakesysfs"
	"github.com/railyard-io/railyard/internal/podresources/podrestest"
)

func sandboxConfig(e *env) string {
	return `apiVersion: railyard.io/v1alpha1
kind: AgentConfig
stateDir: ` + filepath.Join(e.dir, "state") + `
cdiSpecDir: ` + filepath.Join(e.dir, "cdi") + `
resyncInterval: 1h
pools:
- name: ` + vfRes + `
  binding: sandbox
  policy: gpu-aware
  selectors: {linkLayers: [Ethernet]}
`
}

// TestLateBindingThroughTheAgent runs the agent with a sandbox pool on a
// generated roce-8gpu-4nic tree (2 VFs per PF) and plays kubelet in the
// order that defeats allocate-time gpu-aware: the tokens are allocated
// before the GPU, so no GPU is known at GetPreferredAllocation or
// Allocate. PreStartContainer then binds the token to a VF of the GPU's
// rail NIC and the CDI spec gives that VF. An agent restart keeps the
// binding; a VF going DOWN makes one unbound token of its NUMA node
// Unhealthy; the pod ending releases the binding and its spec. Faked:
// kubelet (Registration stub, PodResources server with set answers, the
// RPC calls made here), char devices (regular files).
func TestLateBindingThroughTheAgent(t *testing.T) {
	e := newEnv(t, "roce-8gpu-4nic", 2)
	reg := kubelettest.StartRegistrar(t, e.pluginDir)
	pr := podrestest.Start(t, e.podSock)
	cfg := e.writeConfig(t, sandboxConfig(e))
	r := start(t, e.args(cfg), nil)
	req := reg.Wait(t)
	if !req.Options.GetPreStartRequired() {
		t.Fatalf("registered without PreStartRequired: %+v", req.Options)
	}
	c := dial(t, filepath.Join(e.pluginDir, deviceplugin.SocketName(vfRes)))
	list := kubelettest.Watch(t, c).Next(t, "8 tokens", 5*time.Second, func(l []*pluginapi.Device) bool { return len(l) == 8 })
	var numa1 []string
	for _, d := range list {
		if tk, err := binding.ParseToken(d.ID); err == nil && tk.NUMA == 1 {
			numa1 = append(numa1, d.ID)
		}
	}
	ctx := context.Background()
	// Tokens first: no GPU in PodResources yet.
	pref, err := c.GetPreferredAllocation(ctx, &pluginapi.PreferredAllocationRequest{ContainerRequests: []*pluginapi.ContainerPreferredAllocationRequest{
		{AvailableDeviceIDs: numa1, AllocationSize: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	tok := pref.ContainerResponses[0].DeviceIDs
	if _, err := c.Allocate(ctx, &pluginapi.AllocateRequest{ContainerRequests: []*pluginapi.ContainerAllocateRequest{{DevicesIds: tok}}}); err != nil {
		t.Fatal(err)
	}
	// Then the GPU; the sandbox; PreStartContainer.
	const gpu = "0000:8a:00.0" // PIX to 0000:8b:00.0
	pr.Set(&podresourcesapi.PodResources{Name: "trainer", Namespace: "ml", Containers: []*podresourcesapi.ContainerResources{{
		Name: "main", Devices: []*podresourcesapi.ContainerDevices{
			{ResourceName: vfRes, DeviceIds: tok}, {ResourceName: "nvidia.com/gpu", DeviceIds: []string{gpu}}}}}})
	began := time.Now()
	if _, err := c.PreStartContainer(ctx, &pluginapi.PreStartContainerRequest{DevicesIds: tok}); err != nil {
		t.Fatal(err)
	}
	t.Logf("PreStartContainer bound in %s", time.Since(began))
	spec := filepath.Join(e.dir, "cdi", "railyard.io-binding-"+tok[0]+".json")
	raw, err := os.ReadFile(spec)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Devices []struct {
			ContainerEdits struct {
				Env         []string
				DeviceNodes []struct{ Path, HostPath string }
			}
		}
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	ed := doc.Devices[0].ContainerEdits
	vfAddr := strings.TrimPrefix(ed.Env[slices.IndexFunc(ed.Env, func(s string) bool { return strings.HasPrefix(s, "PCIDEVICE_RAILYARD_IO_RDMA_VF=") })], "PCIDEVICE_RAILYARD_IO_RDMA_VF=")
	if !strings.HasPrefix(vfAddr, "0000:8b:00.") || r.agent.Topology().Class(gpu, "0000:8b:00.0").String() != "PIX" {
		t.Errorf("bound %s, want a VF of 0000:8b:00.0 (PIX to the GPU)", vfAddr)
	}
	if len(ed.DeviceNodes) != 2 || !strings.HasPrefix(ed.DeviceNodes[0].HostPath, e.devRoot+"/infiniband/uverbs") {
		t.Errorf("device nodes %+v", ed.DeviceNodes)
	}
	// The gauge is read from the store at the scrape; the bind's duration
	// was observed before PreStartContainer returned.
	if m := metricsText(t, r); !strings.Contains(m, `railyard_bindings{by="agent",class="PIX",resource="railyard.io/rdma_vf"} 1`) ||
		!(strings.Contains(m, `railyard_bind_duration_seconds_count{at="prestart",result="ok"} 1`) ||
			strings.Contains(m, `railyard_bind_duration_seconds_count{at="early",result="ok"} 1`)) {
		t.Fatalf("metrics lack the binding:\n%s", grepLines(m, "railyard_bind"))
	}

	// Agent restart: the binding stays, the bound token too.
	r.stop()
	reg2 := kubelettest.StartRegistrar(t, e.pluginDir)
	r = start(t, e.args(cfg), nil)
	reg2.Wait(t)
	c = dial(t, filepath.Join(e.pluginDir, deviceplugin.SocketName(vfRes)))
	w := kubelettest.Watch(t, c)
	w.Next(t, "the bound token after restart", 5*time.Second, func(l []*pluginapi.Device) bool {
		return len(l) == 8 && kubelettest.Health(l)[tok[0]] == pluginapi.Healthy
	})
	if _, err := os.Stat(spec); err != nil {
		t.Fatalf("spec lost in the restart: %v", err)
	}

	// The other VF of 0000:8b:00.0 goes DOWN: one unbound NUMA-1 token
	// goes Unhealthy, not the bound one.
	other := "0000:8b:00.1"
	if vfAddr == other {
		other = "0000:8b:00.2"
	}
	vfRDMA := rdmaOf(t, e, other)
	if err := fakesysfs.SetPortState(e.sysfs, vfRDMA, 1, fakesysfs.PortDown); err != nil {
		t.Fatal(err)
	}
	if err := r.agent.Rediscover(ctx, "test"); err != nil {
		t.Fatal(err)
	}
	l := w.Next(t, "one unhealthy token", 5*time.Second, func(l []*pluginapi.Device) bool {
		n := 0
		for _, d := range l {
			if d.Health == pluginapi.Unhealthy {
				n++
			}
		}
		return n == 1
	})
	for _, d := range l {
		if d.Health == pluginapi.Unhealthy && (d.ID == tok[0] || d.Topology.Nodes[0].ID != 1) {
			t.Errorf("unhealthy token %s (NUMA %d); bound token %s", d.ID, d.Topology.Nodes[0].ID, tok[0])
		}
	}

	// The pod ends: kubelet no longer lists it. One GC round is no proof
	// (kubelet lists no pods for a moment after it restarts); GC releases
	// the binding once it stayed unheld for the grace.
	pr.Set()
	r.agent.collectBindings(ctx)
	if _, err := os.Stat(spec); err != nil {
		t.Fatalf("released after one unheld observation: %v", err)
	}
	backdateUnheld(r.agent.late)
	r.agent.collectBindings(ctx)
	if _, err := os.Stat(spec); !os.IsNotExist(err) {
		t.Errorf("spec of the ended pod's token still there: %v", err)
	}
	if m := metricsText(t, r); !strings.Contains(m, `railyard_bindings_released_total{reason="pod-gone"} 1`) {
		t.Errorf("metrics:\n%s", grepLines(m, "railyard_bind"))
	}

	// The same token goes to the next pod, then kubelet restarts and
	// lists no pods for a moment. The first pod's unheld time is not the
	// new binding's: one GC round must not release it. (It did: the
	// unheld times were kept by token, and a proof run lost three bindings
	// of running pods right after a kubelet restart.)
	if _, err := c.Allocate(ctx, &pluginapi.AllocateRequest{ContainerRequests: []*pluginapi.ContainerAllocateRequest{{DevicesIds: tok}}}); err != nil {
		t.Fatal(err)
	}
	pr.Set(&podresourcesapi.PodResources{Name: "trainer-2", Namespace: "ml", Containers: []*podresourcesapi.ContainerResources{{
		Name: "main", Devices: []*podresourcesapi.ContainerDevices{
			{ResourceName: vfRes, DeviceIds: tok}, {ResourceName: "nvidia.com/gpu", DeviceIds: []string{gpu}}}}}})
	if _, err := c.PreStartContainer(ctx, &pluginapi.PreStartContainerRequest{DevicesIds: tok}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(spec); err != nil {
		t.Fatalf("the next pod's token not bound: %v", err)
	}
	pr.Set()
	r.agent.collectBindings(ctx)
	if _, err := os.Stat(spec); err != nil {
		t.Fatalf("the next pod's binding released after one unheld observation (the first pod's unheld time was reused): %v", err)
	}
	// A kubelet restart starts every unheld time again.
	backdateUnheld(r.agent.late)
	r.agent.late.kubeletRestarted()
	r.agent.collectBindings(ctx)
	if _, err := os.Stat(spec); err != nil {
		t.Fatalf("released right after a kubelet restart: %v", err)
	}
}

// backdateUnheld makes the grace end at the next GC round for every
// token GC saw unheld (its grace becomes 0; binding.Reaper's own tests
// time it against the lists' times).
func backdateUnheld(b *lateBinding) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.reaper.Grace = 0
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// rdmaOf returns the RDMA device of a PCI function in the tree.
func rdmaOf(t *testing.T, e *env, pci string) string {
	t.Helper()
	names, err := os.ReadDir(filepath.Join(e.sysfs, "bus/pci/devices", pci, "infiniband"))
	if err != nil || len(names) != 1 {
		t.Fatalf("RDMA device of %s: %v", pci, err)
	}
	return names[0].Name()
}
