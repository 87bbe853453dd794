package agent

import (
	"context"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
	podresourcesapi "k8s.io/kubelet/pkg/apis/podresources/v1"

	"github.com/railyard-io/railyard/internal/binding"
	"github.com/railyard-io/railyard/internal/deviceplugin"
	"github.com/railyard-io/railyard/internal/deviceplugin/kubelettest"
	"github.com/railyard-io/railyard/internal/podresources/podrestest"
)

// earlyEnv runs the agent with a sandbox pool on roce-8gpu-4nic (2 VFs per
// PF) and returns it with its PodResources stand-in, a device plugin
// client and one NUMA-1 token. Faked: kubelet (Registration stub,
// PodResources server with set answers, the RPC calls made by the test).
func earlyEnv(t *testing.T) (*running, *podrestest.Server, pluginapi.DevicePluginClient, string) {
	t.Helper()
	e := newEnv(t, "roce-8gpu-4nic", 2)
	reg := kubelettest.StartRegistrar(t, e.pluginDir)
	pr := podrestest.Start(t, e.podSock)
	r := start(t, e.args(e.writeConfig(t, sandboxConfig(e))), nil)
	// Tokens wait for their early bind as long as the test needs: 2 s
	// ran out on a loaded machine, and PreStartContainer then bound them.
	r.agent.late.mu.Lock()
	r.agent.late.earlyFor = time.Hour
	r.agent.late.mu.Unlock()
	reg.Wait(t)
	c := dial(t, filepath.Join(e.pluginDir, deviceplugin.SocketName(vfRes)))
	list := kubelettest.Watch(t, c).Next(t, "8 tokens", 5*time.Second, func(l []*pluginapi.Device) bool { return len(l) == 8 })
	for _, d := range list {
		if tk, err := binding.ParseToken(d.ID); err == nil && tk.NUMA == 1 {
			return r, pr, c, d.ID
		}
	}
	t.Fatal("no NUMA-1 token")
	return nil, nil, nil, ""
}

// listed is a pod as PodResources lists it: one container with the
// token and, when gpu is not empty, that GPU.
func listed(name, tok, gpu string) *podresourcesapi.PodResources {
	devs := []*podresourcesapi.ContainerDevices{{ResourceName: vfRes, DeviceIds: []string{tok}}}
	if gpu != "" {
		devs = append(devs, &podresourcesapi.ContainerDevices{ResourceName: "nvidia.com/gpu", DeviceIds: []string{gpu}})
	}
	return &podresourcesapi.PodResources{Name: name, Namespace: "ml", Containers: []*podresourcesapi.ContainerResources{{Name: "main", Devices: devs}}}
}

func bindingOf(t *testing.T, r *running, tok string) (binding.Binding, bool) {
	t.Helper()
	bs, err := r.agent.late.store.Bindings()
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range bs {
		if b.Token == tok {
			return b, true
		}
	}
	return binding.Binding{}, false
}

func waitBinding(t *testing.T, r *running, tok, pod string) binding.Binding {
	t.Helper()
	const within = 30 * time.Second // a failure bound only: the early binder polls every 5-50 ms
	deadline := time.Now().Add(within)
	for {
		if b, ok := bindingOf(t, r, tok); ok && b.Pod.Name == pod {
			return b
		}
		if time.Now().After(deadline) {
			t.Fatalf("token %s not bound to pod %s within %v", tok, pod, within)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func metricsText(t *testing.T, r *running) string {
	t.Helper()
	resp, err := http.Get("http://" + r.metrics.String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestEarlyBindingWaitsForGPUsThenBindsBeforePreStart plays kubelet's
// tokens-first order: after Allocate, PodResources lists the container
// with its token and no GPU (kubelet is still allocating), and the early
// binder must not bind; once the GPU is listed it binds the token near it
// without any PreStartContainer, and PreStartContainer then finds it bound
// (the prestart-bound path, no list).
func TestEarlyBindingWaitsForGPUsThenBindsBeforePreStart(t *testing.T) {
	r, pr, c, tok := earlyEnv(t)
	ctx := context.Background()
	pr.Set(listed("trainer", tok, ""))
	if _, err := c.Allocate(ctx, &pluginapi.AllocateRequest{ContainerRequests: []*pluginapi.ContainerAllocateRequest{{DevicesIds: []string{tok}}}}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // ~60 polls
	if b, ok := bindingOf(t, r, tok); ok {
		t.Fatalf("bound before the GPU was listed: %+v", b)
	}
	const gpu = "0000:8a:00.0" // PIX to 0000:8b:00.0
	pr.Set(listed("trainer", tok, gpu))
	b := waitBinding(t, r, tok, "trainer")
	if !strings.HasPrefix(b.Device, "0000:8b:00.") || b.Class != "PIX" || b.By != binding.ByAgent {
		t.Errorf("early binding %+v, want a VF of 0000:8b:00.0, PIX, by agent", b)
	}
	if _, err := c.PreStartContainer(ctx, &pluginapi.PreStartContainerRequest{DevicesIds: []string{tok}}); err != nil {
		t.Fatal(err)
	}
	m := metricsText(t, r)
	for _, want := range []string{
		`railyard_bind_duration_seconds_count{at="early",result="ok"} 1`,
		`railyard_bind_duration_seconds_count{at="prestart-bound",result="ok"} 1`,
	} {
		if !strings.Contains(m, want) {
			t.Errorf("metrics lack %s:\n%s", want, grepLines(m, "railyard_bind_duration_seconds_count"))
		}
	}
	if strings.Contains(m, `railyard_bind_duration_seconds_count{at="prestart",`) {
		t.Errorf("PreStartContainer bound again:\n%s", grepLines(m, "railyard_bind_duration_seconds_count"))
	}
	if after, _ := bindingOf(t, r, tok); after.Device != b.Device {
		t.Errorf("PreStartContainer changed the binding: %s -> %s", b.Device, after.Device)
	}
}

// TestPreStartBindsWhatTheEarlyBinderCannot: a container listed with
// tokens and no GPU (a NIC-only pod, or one kubelet has not given its GPUs
// yet) is never bound early; PreStartContainer binds it, as before.
func TestPreStartBindsWhatTheEarlyBinderCannot(t *testing.T) {
	r, pr, c, tok := earlyEnv(t)
	ctx := context.Background()
	pr.Set(listed("nic-only", tok, ""))
	if _, err := c.Allocate(ctx, &pluginapi.AllocateRequest{ContainerRequests: []*pluginapi.ContainerAllocateRequest{{DevicesIds: []string{tok}}}}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(150 * time.Millisecond)
	if _, err := c.PreStartContainer(ctx, &pluginapi.PreStartContainerRequest{DevicesIds: []string{tok}}); err != nil {
		t.Fatal(err)
	}
	if b, ok := bindingOf(t, r, tok); !ok || b.Pod.Name != "nic-only" {
		t.Fatalf("PreStartContainer did not bind the token: %+v", b)
	}
	m := metricsText(t, r)
	if !strings.Contains(m, `railyard_bind_duration_seconds_count{at="prestart",result="ok"} 1`) || strings.Contains(m, `at="early"`) {
		t.Errorf("want one PreStartContainer bind and no early one:\n%s", grepLines(m, "railyard_bind_duration_seconds_count"))
	}
}

// TestEarlyBindingIsNotTrustedAfterANewAllocate: a token bound early for
// one pod and allocated again by kubelet (that pod ended, another got the
// token) is no longer "bound early": PreStartContainer must list and bind
// it for the new pod, near the new pod's GPU.
func TestEarlyBindingIsNotTrustedAfterANewAllocate(t *testing.T) {
	r, pr, c, tok := earlyEnv(t)
	ctx := context.Background()
	allocate := func() {
		t.Helper()
		if _, err := c.Allocate(ctx, &pluginapi.AllocateRequest{ContainerRequests: []*pluginapi.ContainerAllocateRequest{{DevicesIds: []string{tok}}}}); err != nil {
			t.Fatal(err)
		}
	}
	pr.Set(listed("first", tok, "0000:8a:00.0"))
	allocate()
	waitBinding(t, r, tok, "first")
	// boundEarly waits for the early bind under way to be recorded.
	if !r.agent.late.boundEarly(ctx, []string{tok}) {
		t.Fatal("the early binding is not trusted before any new Allocate")
	}
	// The first pod ended (kubelet lists it no more) and kubelet gave the
	// token to another pod, not yet listed: a list still showing the first
	// pod after the new Allocate cannot happen, and the early binder would
	// rightly take it as the token's holder.
	pr.Set()
	allocate()
	if r.agent.late.boundEarly(ctx, []string{tok}) {
		t.Fatal("a binding made before the token's latest Allocate is trusted")
	}
	const gpu = "0000:85:00.0" // NUMA 1 too; PIX to 0000:84:00.0
	pr.Set(listed("second", tok, gpu))
	if _, err := c.PreStartContainer(ctx, &pluginapi.PreStartContainerRequest{DevicesIds: []string{tok}}); err != nil {
		t.Fatal(err)
	}
	if b, ok := bindingOf(t, r, tok); !ok || b.Pod.Name != "second" || !strings.HasPrefix(b.Device, "0000:84:00.") {
		t.Errorf("after the new Allocate the token is bound %+v; want pod second on a VF of 0000:84:00.0, %s's rail", b, gpu)
	}
}

// TestPreStartDuringAnEarlyBindWaitsForIt holds an early bind right after
// its commit (the store's fault hook, at the first CDI spec write) and
// calls PreStartContainer then: it must wait for the early bind and find
// the token bound early, never list and bind a second time (the race a
// loaded machine hit: the commit was visible before the agent recorded
// that it came from a list after the token's Allocate). Faked: kubelet
// (PodResources stand-in, the calls made here).
func TestPreStartDuringAnEarlyBindWaitsForIt(t *testing.T) {
	r, pr, _, tok := earlyEnv(t)
	ctx := context.Background()
	pr.Set(listed("trainer", tok, "0000:8a:00.0"))
	committed, release := make(chan struct{}), make(chan struct{})
	var mu sync.Mutex
	var steps []string
	fault := func(step string) error {
		mu.Lock()
		steps = append(steps, step)
		first := step == binding.StepWriteSpec && !slices.Contains(steps[:len(steps)-1], binding.StepWriteSpec)
		mu.Unlock()
		if first {
			close(committed)
			<-release
		}
		return nil
	}
	late := r.agent.late
	lb := newLateBinding(r.agent.cfg, late.lister, late.resolver, late.log, prometheus.NewRegistry(), binding.Options{Fault: fault})
	lb.Allocated(vfRes, []string{tok})
	early := make(chan struct{})
	go func() { defer close(early); lb.bindWaiting(ctx) }()
	<-committed
	prestart := make(chan error, 1)
	go func() { prestart <- lb.BindTokens(ctx, vfRes, []string{tok}) }()
	// Give PreStartContainer time to decide while the bind is committed
	// and unrecorded (before the fix it listed and locked the store here).
	time.Sleep(100 * time.Millisecond)
	close(release)
	<-early
	if err := <-prestart; err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	committedAt := slices.Index(steps, binding.StepWriteSpec)
	if i := slices.Index(steps[committedAt:], binding.StepLock); i >= 0 {
		t.Errorf("the store was locked after the early bind's commit (PreStartContainer bound again): steps %v", steps)
	}
	mu.Unlock()
	if b, ok := bindingOf(t, r, tok); !ok || b.Pod.Name != "trainer" {
		t.Errorf("token not bound to trainer: %+v", b)
	}
}
