package agent

import (
	"bytes"
	"context"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/railyard-io/railyard/internal/deviceplugin/kubelettest"
	"github.com/railyard-io/railyard/internal/discovery"
	"github.com/railyard-io/railyard/internal/fakesysfs"
	"github.com/railyard-io/railyard/machines"
)

// env is a fake node for the agent: a generated sysfs tree, a device-node
// root with stand-in files for every uverbs device, a plugin directory and
// a PodResources socket.
type env struct {
	sysfs, devRoot, dir, pluginDir, podSock, devInfo string
}

func newEnv(t testing.TB, machineName string, vfs int) *env {
	t.Helper()
	sys, err := fakesysfs.MkdirTemp()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fakesysfs.Cleanup(sys) })
	if err := machines.WriteSysfs(machineName, sys, vfs); err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("/tmp", "ryag")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	e := &env{sysfs: sys, dir: dir, devRoot: filepath.Join(dir, "dev"), pluginDir: filepath.Join(dir, "dp"),
		podSock: filepath.Join(dir, "pr.sock"), devInfo: filepath.Join(dir, "devinfo")}
	if err := os.MkdirAll(e.pluginDir, 0o755); err != nil {
		t.Fatal(err)
	}
	e.makeDevNodes(t)
	return e
}

// cniState is the agent's railyard-cni state directory (empty until a
// test writes records there), never the host's.
func (e *env) cniState() string { return filepath.Join(e.dir, "cni-state") }

// makeDevNodes (re)creates stand-in files for the tree's uverbs devices.
func (e *env) makeDevNodes(t testing.TB) {
	t.Helper()
	if err := fakesysfs.WriteDevNodes(e.sysfs, e.devRoot); err != nil {
		t.Fatal(err)
	}
}

func (e *env) writeConfig(t testing.TB, body string) string {
	t.Helper()
	p := filepath.Join(e.dir, "config.yaml")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func (e *env) args(config string) []string {
	return []string{"--config", config, "--sysfs", e.sysfs, "--dev-root", e.devRoot, "--plugin-dir", e.pluginDir,
		"--pod-resources-socket", e.podSock, "--devinfo-dir", e.devInfo, "--metrics-addr", "127.0.0.1:0", "--log-level", "debug",
		"--cni-state-dir", e.cniState()}
}

// syncBuffer is a goroutine-safe log sink.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

type running struct {
	agent   *Agent
	metrics net.Addr
	log     *syncBuffer
	stop    func()
}

// start runs the agent as main does, with a fixed environment.
func start(t testing.TB, args []string, environ map[string]string) *running {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{log: &syncBuffer{}}
	readyc := make(chan struct{})
	done := make(chan error, 1)
	lookup := func(k string) (string, bool) { v, ok := environ[k]; return v, ok }
	go func() {
		done <- run(ctx, args, lookup, r.log, discovery.Discover,
			func(a *Agent, addr net.Addr) { r.agent, r.metrics = a, addr; close(readyc) })
	}()
	select {
	case <-readyc:
	case err := <-done:
		cancel()
		t.Fatalf("agent exited: %v\n%s", err, r.log)
	case <-time.After(20 * time.Second):
		cancel()
		t.Fatal("agent not ready within 20s")
	}
	var once sync.Once
	r.stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("agent: %v", err)
			}
		})
	}
	t.Cleanup(r.stop)
	return r
}

func dial(t testing.TB, socket string) pluginapi.DevicePluginClient {
	t.Helper()
	return kubelettest.Dial(t, socket)
}

// stream reads ListAndWatch in the background.
type stream struct{ *kubelettest.Stream }

func watch(t testing.TB, c pluginapi.DevicePluginClient) stream {
	t.Helper()
	return stream{kubelettest.Watch(t, c)}
}

// next waits for a list whose device health map satisfies ok.
func (s stream) next(t testing.TB, what string, timeout time.Duration, ok func(map[string]string) bool) map[string]string {
	t.Helper()
	return kubelettest.Health(s.Next(t, what, timeout, func(l []*pluginapi.Device) bool { return ok(kubelettest.Health(l)) }))
}
