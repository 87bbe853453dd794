package agent

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/railyard-io/railyard/internal/deviceplugin/kubelettest"
	"github.com/railyard-io/railyard/internal/podresources/podrestest"

	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/railyard-io/railyard/internal/deviceplugin"
	"github.com/railyard-io/railyard/internal/discovery"
	"github.com/railyard-io/railyard/internal/topology"
)

// TestDiscoveryFailureKeepsDevicesAndRecovers injects a failing discovery
// after the first one: the pool keeps its devices, /healthz turns 503 and
// returns to 200 once discovery works again.
func TestDiscoveryFailureKeepsDevicesAndRecovers(t *testing.T) {
	e := newEnv(t, "roce-8gpu-4nic", 1)
	reg := kubelettest.StartRegistrar(t, e.pluginDir)
	podrestest.Start(t, e.podSock)
	var broken atomic.Bool
	discover := func(ctx context.Context, root string) (*topology.Topology, error) {
		if broken.Load() {
			return nil, errors.New("injected: sysfs unreadable")
		}
		return discovery.Discover(ctx, root)
	}
	fs := e.args(e.writeConfig(t, twoPools(`""`)))
	opt, err := ParseOptions(append(fs, "--resync-interval", "1s"), func(string) (string, bool) { return "", false }, newFlagSet())
	if err != nil {
		t.Fatal(err)
	}
	a, err := New(opt.Config, slog.New(slog.DiscardHandler), discover)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	addrc := make(chan net.Addr, 1)
	done := make(chan error, 1)
	go func() { done <- a.Serve(ctx, func(_ *Agent, addr net.Addr) { addrc <- addr }) }()
	defer func() { cancel(); <-done }()
	base := "http://" + (<-addrc).String()
	reg.WaitAll(t, vfRes, pfRes)
	st := watch(t, dial(t, filepath.Join(e.pluginDir, deviceplugin.SocketName(vfRes))))
	st.next(t, "3 VFs", 5*time.Second, func(h map[string]string) bool { return len(h) == 3 })

	broken.Store(true)
	waitHealthz(t, base, 503)
	if h := a.Plugins()[0].Devices(); len(h) != 3 || h[0].Health != pluginapi.Healthy {
		t.Errorf("devices after failed discoveries: %v", h)
	}
	broken.Store(false)
	waitHealthz(t, base, 200)
}

func waitHealthz(t *testing.T, base string, code int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		got, body := httpGet(t, base+"/healthz")
		if got == code {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("/healthz = %d %q, want %d", got, body, code)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
