package deviceplugin

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/railyard-io/railyard/internal/alloc"
	"github.com/railyard-io/railyard/internal/binding"
	"github.com/railyard-io/railyard/internal/containerdev"
	"github.com/railyard-io/railyard/internal/deviceplugin/kubelettest"
	"github.com/railyard-io/railyard/internal/discovery"
	"github.com/railyard-io/railyard/internal/pool"
)

// recordingBinder records what the plugin asks of the binder.
type recordingBinder struct {
	mu        sync.Mutex
	bound     [][]string
	allocated [][]string
	err       error
}

func (b *recordingBinder) BindTokens(_ context.Context, resource string, tokens []string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.bound = append(b.bound, append([]string{resource}, tokens...))
	return b.err
}

func (b *recordingBinder) Allocated(resource string, tokens []string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.allocated = append(b.allocated, append([]string{resource}, tokens...))
}

// TestSandboxPoolServesTokens: a pool with a binder registers asking for
// PreStartContainer, lists one token per VF with the VF's NUMA node,
// prefers tokens on the NUMA node of the pod's GPUs, answers Allocate with
// one CDI device per token (and nothing that names a device), and binds at
// PreStartContainer, failing it when the binder fails.
func TestSandboxPoolServesTokens(t *testing.T) {
	n := newNode(t, "roce-8gpu-4nic", 2)
	reg := kubelettest.StartRegistrar(t, n.pluginDir)
	topo, err := discovery.Discover(context.Background(), n.sysfs)
	if err != nil {
		t.Fatal(err)
	}
	sel, _ := pool.Compile(vfPool)
	bp := binding.Pool{Resource: resource, Tag: binding.PoolTag(resource)}
	for _, d := range sel.Select(topo) {
		bp.Devices = append(bp.Devices, binding.Device{ID: d.ID, PF: d.PF, NUMA: d.NUMA, Healthy: true})
	}
	var devs []Device
	for _, ts := range binding.Tokens(&bp, nil, nil) {
		devs = append(devs, Device{Device: pool.Device{ID: ts.ID, NUMA: ts.NUMA, Healthy: ts.Healthy, Share: -1}})
	}
	b := &recordingBinder{}
	gpu1 := ""
	for _, g := range topo.GPUs {
		if g.NUMA == 1 {
			gpu1 = g.PCI
			break
		}
	}
	pol, _ := alloc.ByName("gpu-aware")
	p := New(Config{Resource: resource, PluginDir: n.pluginDir, DevRoot: n.devRoot, Nodes: containerdev.Options{RDMACM: true}, Policy: pol,
		GPUs: fakeGPUs{gpu1}, Binder: b, Log: testLogger(t)})
	p.Update(topo, devs)
	runPlugin(t, p)
	req := reg.Wait(t)
	if req.Options == nil || !req.Options.PreStartRequired || !req.Options.GetPreferredAllocationAvailable {
		t.Fatalf("register options %+v, want PreStartRequired", req.Options)
	}
	c := dial(t, p)
	list := kubelettest.Watch(t, c).Next(t, "8 tokens", 10*time.Second, func(l []*pluginapi.Device) bool { return len(l) == 8 })
	var all []string
	for _, d := range list {
		id, err := binding.ParseToken(d.ID)
		if err != nil || d.Topology == nil || d.Topology.Nodes[0].ID != int64(id.NUMA) || d.Health != pluginapi.Healthy {
			t.Errorf("token %+v (%v)", d, err)
		}
		all = append(all, d.ID)
	}
	ctx := context.Background()
	pref, err := c.GetPreferredAllocation(ctx, &pluginapi.PreferredAllocationRequest{ContainerRequests: []*pluginapi.ContainerPreferredAllocationRequest{
		{AvailableDeviceIDs: all, AllocationSize: 2}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range pref.ContainerResponses[0].DeviceIDs {
		if tk, _ := binding.ParseToken(id); tk.NUMA != 1 {
			t.Errorf("preferred %v, want tokens of NUMA 1 (the GPU's)", pref.ContainerResponses[0].DeviceIDs)
		}
	}
	toks := pref.ContainerResponses[0].DeviceIDs
	resp, err := c.Allocate(ctx, &pluginapi.AllocateRequest{ContainerRequests: []*pluginapi.ContainerAllocateRequest{{DevicesIds: toks}}})
	if err != nil {
		t.Fatal(err)
	}
	car := resp.ContainerResponses[0]
	var cdi []string
	for _, d := range car.CdiDevices {
		cdi = append(cdi, d.Name)
	}
	if want := []string{binding.CDIName(toks[0]), binding.CDIName(toks[1])}; !slices.Equal(cdi, want) {
		t.Errorf("CDI devices %v, want %v", cdi, want)
	}
	if len(car.Devices) != 0 || len(car.Mounts) != 0 || car.Envs[TokensEnvName(resource)] != strings.Join(toks, ",") || len(car.Envs) != 1 {
		t.Errorf("allocate response %+v: want only the CDI devices and %s", car, TokensEnvName(resource))
	}
	if _, err := c.PreStartContainer(ctx, &pluginapi.PreStartContainerRequest{DevicesIds: toks}); err != nil {
		t.Fatal(err)
	}
	b.mu.Lock()
	if len(b.allocated) != 1 || len(b.bound) != 1 || !slices.Equal(b.bound[0], append([]string{resource}, toks...)) {
		t.Errorf("binder saw allocated %v, bound %v", b.allocated, b.bound)
	}
	b.err = errors.New("no view")
	b.mu.Unlock()
	_, err = c.PreStartContainer(ctx, &pluginapi.PreStartContainerRequest{DevicesIds: toks})
	if status.Code(err) != codes.Unavailable || !strings.Contains(err.Error(), "no view") {
		t.Errorf("PreStartContainer with a failing binder: %v", err)
	}
	if _, err := c.Allocate(ctx, &pluginapi.AllocateRequest{ContainerRequests: []*pluginapi.ContainerAllocateRequest{{DevicesIds: []string{"0000:05:00.1"}}}}); status.Code(err) != codes.NotFound {
		t.Errorf("Allocate of a device ID in a token pool: %v", err)
	}
}

// TestRenumberedTokenIsStillAllocatable: kubelet chose a token from the
// list it had; by its Allocate the pool has renumbered its tokens (a bind
// crossed NUMA nodes) and lists that token Unhealthy. Allocate still
// answers it with its CDI device (refusing it failed the pod's admission
// for good: seen in the e2e); an ID the pool never listed is NotFound.
func TestRenumberedTokenIsStillAllocatable(t *testing.T) {
	n := newNode(t, "roce-8gpu-4nic", 2)
	reg := kubelettest.StartRegistrar(t, n.pluginDir)
	topo, err := discovery.Discover(context.Background(), n.sysfs)
	if err != nil {
		t.Fatal(err)
	}
	tok := func(numa, k int) Device {
		return Device{Device: pool.Device{ID: binding.Token("ab12cd34", numa, k), NUMA: numa, Healthy: true, Share: -1}}
	}
	b := &recordingBinder{}
	p := New(Config{Resource: resource, PluginDir: n.pluginDir, DevRoot: n.devRoot, Nodes: containerdev.Options{RDMACM: true}, Binder: b, Log: testLogger(t)})
	p.Update(topo, []Device{tok(1, 0), tok(1, 1), tok(1, 4)})
	runPlugin(t, p)
	reg.Wait(t)
	c := dial(t, p)
	w := kubelettest.Watch(t, c)
	w.Next(t, "3 tokens", 10*time.Second, func(l []*pluginapi.Device) bool { return len(l) == 3 })
	gone := tok(1, 4).ID
	p.Update(topo, []Device{tok(1, 0), tok(1, 1), tok(1, 2)}) // n1-4 renumbered to n1-2
	w.Next(t, "the renumbered token Unhealthy", 10*time.Second, func(l []*pluginapi.Device) bool {
		return kubelettest.Health(l)[gone] == pluginapi.Unhealthy
	})
	ctx := context.Background()
	resp, err := c.Allocate(ctx, &pluginapi.AllocateRequest{ContainerRequests: []*pluginapi.ContainerAllocateRequest{{DevicesIds: []string{gone}}}})
	if err != nil {
		t.Fatalf("Allocate of the renumbered token: %v", err)
	}
	if cdi := resp.ContainerResponses[0].CdiDevices; len(cdi) != 1 || cdi[0].Name != binding.CDIName(gone) {
		t.Errorf("CDI devices %+v, want %s", cdi, binding.CDIName(gone))
	}
	if len(b.allocated) != 1 || !slices.Contains(b.allocated[0], gone) {
		t.Errorf("binder told %v, want the renumbered token held", b.allocated)
	}
	never := tok(1, 9).ID
	_, err = c.Allocate(ctx, &pluginapi.AllocateRequest{ContainerRequests: []*pluginapi.ContainerAllocateRequest{{DevicesIds: []string{never}}}})
	if status.Code(err) != codes.NotFound {
		t.Errorf("Allocate of a token never listed: %v, want NotFound", err)
	}
}
