package deviceplugin

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"

	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/railyard-io/railyard/api/config/v1alpha1"
	"github.com/railyard-io/railyard/internal/alloc"
	"github.com/railyard-io/railyard/internal/containerdev"
	"github.com/railyard-io/railyard/internal/deviceplugin/kubelettest"
	"github.com/railyard-io/railyard/internal/discovery"
	"github.com/railyard-io/railyard/internal/fakesysfs"
	"github.com/railyard-io/railyard/internal/pool"
	"github.com/railyard-io/railyard/machines"
)

// node is a generated fake sysfs tree, a device-node root with stand-in
// files for every uverbs device and rdma_cm, and a plugin directory.
type node struct {
	sysfs, devRoot, pluginDir, devInfoDir string
}

func newNode(t testing.TB, machineName string, vfs int) *node {
	t.Helper()
	sys, err := fakesysfs.MkdirTemp()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fakesysfs.Cleanup(sys) })
	if err := machines.WriteSysfs(machineName, sys, vfs); err != nil {
		t.Fatal(err)
	}
	n := &node{sysfs: sys, devRoot: t.TempDir(), pluginDir: shortTempDir(t), devInfoDir: filepath.Join(t.TempDir(), "devinfo", "dp")}
	n.makeDevNodes(t)
	return n
}

// shortTempDir keeps unix socket paths under the 108-byte limit.
func shortTempDir(t testing.TB) string {
	d, err := os.MkdirTemp("/tmp", "rydp")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

// makeDevNodes creates regular files standing in for the char devices of
// every uverbs device in the tree (there is no RDMA hardware here).
func (n *node) makeDevNodes(t testing.TB) {
	t.Helper()
	if err := fakesysfs.WriteDevNodes(n.sysfs, n.devRoot); err != nil {
		t.Fatal(err)
	}
}

// refresh discovers the tree and feeds the pool's devices to the plugin,
// as the agent does on every change.
func refresh(t testing.TB, n *node, p *Plugin, poolCfg v1alpha1.Pool) bool {
	t.Helper()
	topo, err := discovery.Discover(context.Background(), n.sysfs)
	if err != nil {
		t.Fatal(err)
	}
	sel, err := pool.Compile(poolCfg)
	if err != nil {
		t.Fatal(err)
	}
	var devs []Device
	for _, d := range sel.Select(topo) {
		devs = append(devs, Device{Device: d})
	}
	return p.Update(topo, devs)
}

func newPlugin(t testing.TB, n *node, resource, policy string, gpus GPUFinder) *Plugin {
	t.Helper()
	pol, err := alloc.ByName(policy)
	if err != nil {
		t.Fatal(err)
	}
	return New(Config{
		Resource: resource, PluginDir: n.pluginDir, DevRoot: n.devRoot, DevInfoDir: n.devInfoDir,
		Nodes: containerdev.Options{RDMACM: true}, Policy: pol, GPUs: gpus, Log: testLogger(t),
	})
}

func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Log(string(b))
	return len(b), nil
}

// runPlugin runs p until the test ends.
func runPlugin(t testing.TB, p *Plugin) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); _ = p.Run(ctx) }()
	t.Cleanup(func() { cancel(); wg.Wait() })
}

// dial connects a real DevicePlugin client to the plugin's socket, as
// kubelet does after registration.
func dial(t testing.TB, p *Plugin) pluginapi.DevicePluginClient {
	t.Helper()
	return kubelettest.Dial(t, p.SocketPath())
}

// health maps device IDs to their health.
func health(list []*pluginapi.Device) map[string]string { return kubelettest.Health(list) }
