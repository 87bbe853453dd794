package agent

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/railyard-io/railyard/internal/binding"
	"github.com/railyard-io/railyard/internal/deviceplugin"
	"github.com/railyard-io/railyard/internal/deviceplugin/kubelettest"
	"github.com/railyard-io/railyard/internal/podresources/podrestest"
)

// lostBindingEnv binds one NUMA-1 token for the running pod "running"
// (GPU 0000:8a:00.0, PIX to 0000:8b:00.0, whose NIC has 2 VFs), stops the
// agent and removes <stateDir>/binding, as a lost or wiped state directory
// would; damage, when set, then changes the token's CDI spec. It starts
// the agent again and returns it with a client, the PodResources stand-in,
// the bound token and device, and a second free NUMA-1 token. Faked:
// kubelet (Registration stub, PodResources stand-in, the calls made here).
func lostBindingEnv(t *testing.T, damage func(spec string)) (r *running, c pluginapi.DevicePluginClient, pr *podrestest.Server, tok, dev, next string) {
	t.Helper()
	e := newEnv(t, "roce-8gpu-4nic", 2)
	reg := kubelettest.StartRegistrar(t, e.pluginDir)
	pr = podrestest.Start(t, e.podSock)
	cfg := e.writeConfig(t, sandboxConfig(e))
	r = start(t, e.args(cfg), nil)
	reg.Wait(t)
	c = dial(t, filepath.Join(e.pluginDir, deviceplugin.SocketName(vfRes)))
	var numa1 []string
	for _, d := range kubelettest.Watch(t, c).Next(t, "8 tokens", 5*time.Second, func(l []*pluginapi.Device) bool { return len(l) == 8 }) {
		if tk, err := binding.ParseToken(d.ID); err == nil && tk.NUMA == 1 {
			numa1 = append(numa1, d.ID)
		}
	}
	tok, next = numa1[0], numa1[1]
	pr.Set(listed("running", tok, "0000:8a:00.0"))
	if _, err := c.PreStartContainer(context.Background(), &pluginapi.PreStartContainerRequest{DevicesIds: []string{tok}}); err != nil {
		t.Fatal(err)
	}
	b, ok := bindingOf(t, r, tok)
	if !ok {
		t.Fatal("not bound")
	}
	dev = b.Device
	r.stop()
	if err := os.RemoveAll(BindingDir(filepath.Join(e.dir, "state"))); err != nil {
		t.Fatal(err)
	}
	spec := binding.CDISpecPath(filepath.Join(e.dir, "cdi"), tok)
	if damage != nil {
		damage(spec)
	}
	reg2 := kubelettest.StartRegistrar(t, e.pluginDir)
	r = start(t, e.args(cfg), nil)
	reg2.Wait(t)
	if _, err := os.Stat(spec); err != nil {
		t.Errorf("the running pod's CDI spec is gone after the restart: %v", err)
	}
	return r, dial(t, filepath.Join(e.pluginDir, deviceplugin.SocketName(vfRes))), pr, tok, dev, next
}

// TestLostBindingsOfRunningPodsAreRecovered: with the bindings file lost
// while a pod runs, the start-up clean-up deleted that pod's CDI spec as a
// stray, logged nothing, and the next pod near the same GPU was bound to
// the VF the running container uses. The agent must rebuild the binding
// from the spec and bind the next pod elsewhere.
func TestLostBindingsOfRunningPodsAreRecovered(t *testing.T) {
	r, c, pr, tok, dev, next := lostBindingEnv(t, nil)
	b, ok := bindingOf(t, r, tok)
	if !ok || b.Device != dev || b.Pod.Name != "running" || b.Container != "main" || b.Class != "PIX" {
		t.Fatalf("after the restart the running pod's token is bound %+v (ok=%v); want %s for running/main, PIX", b, ok, dev)
	}
	if !strings.Contains(r.log.String(), "binding recovered from its CDI spec") {
		t.Errorf("the recovery is not logged:\n%s", r.log)
	}
	pr.Set(listed("running", tok, "0000:8a:00.0"), listed("next", next, "0000:8a:00.0"))
	if _, err := c.PreStartContainer(context.Background(), &pluginapi.PreStartContainerRequest{DevicesIds: []string{next}}); err != nil {
		t.Fatal(err)
	}
	if nb, ok := bindingOf(t, r, next); !ok || nb.Device == dev {
		t.Errorf("the next pod is bound %+v; want a device other than the running pod's %s", nb, dev)
	}
}

// TestUnrecoverableLostBindingRefusesThePool: the running pod's CDI spec
// no longer names a device (garbled), so its device is unknown: the pool
// must bind nothing new while kubelet holds the token (a loud error, the
// spec kept), and bind again once that pod has ended.
func TestUnrecoverableLostBindingRefusesThePool(t *testing.T) {
	r, c, pr, tok, _, next := lostBindingEnv(t, func(spec string) {
		if err := os.WriteFile(spec, []byte(`{"cdiVersion":"0.5.0","kind":"railyard.io/binding","devices":[]}`), 0o644); err != nil {
			t.Fatal(err)
		}
	})
	if _, ok := bindingOf(t, r, tok); ok {
		t.Fatal("bound from a spec that names no device")
	}
	if !strings.Contains(r.log.String(), "pool refused") {
		t.Errorf("the refusal is not logged:\n%s", r.log)
	}
	ctx := context.Background()
	pr.Set(listed("running", tok, "0000:8a:00.0"), listed("next", next, "0000:8a:00.0"))
	_, err := c.PreStartContainer(ctx, &pluginapi.PreStartContainerRequest{DevicesIds: []string{next}})
	if err == nil || !strings.Contains(err.Error(), binding.ErrPoolRefused.Error()) {
		t.Errorf("PreStartContainer in a refused pool: err = %v, want %v", err, binding.ErrPoolRefused)
	}
	if _, ok := bindingOf(t, r, next); ok {
		t.Error("a token of the refused pool was bound")
	}
	pr.Set(listed("next", next, "0000:8a:00.0")) // the running pod ended
	r.agent.late.collect(ctx)
	if _, err := c.PreStartContainer(ctx, &pluginapi.PreStartContainerRequest{DevicesIds: []string{next}}); err != nil {
		t.Errorf("after the pod holding the unknown token ended: %v", err)
	}
}
