package deviceplugin

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
)

// KubeletSocket is kubelet's registration socket name in the plugin dir.
const KubeletSocket = "kubelet.sock"

// retryDelay is the pause between failed attempts to serve and register.
const retryDelay = time.Second

// quickRetryDelay is the pause after a failed attempt that Restart started.
const quickRetryDelay = 50 * time.Millisecond

// SocketName is the plugin's socket file name in the device plugin
// directory: "railyard-railyard_io_rdma_vf_a.sock".
func SocketName(resource string) string {
	return "railyard-" + strings.NewReplacer(".", "_", "/", "_").Replace(resource) + ".sock"
}

// SocketPath is the plugin's socket path.
func (p *Plugin) SocketPath() string {
	return filepath.Join(p.cfg.PluginDir, SocketName(p.cfg.Resource))
}

// Run serves the plugin until ctx is done: it creates the socket, starts
// the gRPC server, registers with kubelet and waits; when registration
// fails, the server stops or Restart is called, it starts over. A pool
// that allocates devices keeps their device-info files meanwhile
// (devinfo.go) and removes them before Run returns. It returns nil when
// ctx is done.
func (p *Plugin) Run(ctx context.Context) error {
	if p.keepsDevInfo() {
		defer p.keepDevInfo(ctx)()
	}
	lastErr := ""
	woken := false // the last attempt was started by Restart
	for {
		err := p.serveOnce(ctx)
		p.cfg.Metrics.SetRegistered(p.cfg.Resource, false)
		if ctx.Err() != nil {
			return nil
		}
		delay := retryDelay
		switch {
		case errors.Is(err, errRestart):
			delay = 0
			lastErr = ""
			p.cfg.Log.Info("restarting device plugin server", "resource", p.cfg.Resource)
		case err.Error() != lastErr:
			lastErr = err.Error()
			p.cfg.Log.Warn("device plugin server stopped; retrying every second", "resource", p.cfg.Resource, "err", err)
		default:
			p.cfg.Log.Debug("device plugin server stopped again", "resource", p.cfg.Resource, "err", err)
		}
		if woken && delay > quickRetryDelay {
			// kubelet.sock appeared: kubelet binds it a moment before it
			// listens, so a refused first attempt is retried quickly.
			delay = quickRetryDelay
		}
		woken = false
		select {
		case <-ctx.Done():
			return nil
		case <-p.restart:
			woken = true
		case <-time.After(delay):
		}
	}
}

var errRestart = errors.New("restart requested")

func (p *Plugin) serveOnce(ctx context.Context) error {
	// Drain a restart requested before this attempt: it is served by it. A
	// restart requested from here on (kubelet.sock appearing while we
	// register) stays pending, so a failed registration is retried at once
	// rather than after retryDelay.
	select {
	case <-p.restart:
	default:
	}
	sock := p.SocketPath()
	if err := os.Remove(sock); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("removing stale socket: %w", err)
	}
	lis, err := net.Listen("unix", sock)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", sock, err)
	}
	own, err := os.Stat(sock)
	if err != nil {
		lis.Close()
		return fmt.Errorf("socket %s: %w", sock, err)
	}
	srv := grpc.NewServer()
	pluginapi.RegisterDevicePluginServer(srv, &rpcServer{p: p})
	served := make(chan error, 1)
	go func() { served <- srv.Serve(lis) }()
	defer func() {
		p.serving.Store(false)
		srv.Stop()
		_ = os.Remove(sock)
	}()
	kubelet := filepath.Join(p.cfg.PluginDir, KubeletSocket)
	registeredWith, _ := os.Stat(kubelet) // nil: re-checked on the next request
	if err := p.register(ctx, kubelet); err != nil {
		return err
	}
	p.serving.Store(true)
	p.cfg.Metrics.SetRegistered(p.cfg.Resource, true)
	p.cfg.Log.Info("registered with kubelet", "resource", p.cfg.Resource, "socket", sock, "devices", len(p.current().list))
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-p.restart:
			if stale(sock, own, kubelet, registeredWith) {
				return errRestart
			}
			// One kubelet restart sends several requests (kubelet.sock
			// created, our socket removed); one may arrive after this
			// attempt already served it. Serving again would drop the
			// connection kubelet just opened.
			p.cfg.Log.Debug("restart request already served", "resource", p.cfg.Resource)
		case err := <-served:
			return fmt.Errorf("gRPC server: %w", err)
		}
	}
}

// stale says whether the plugin must serve again: its socket file is gone
// or replaced, or kubelet.sock is another file than the one it registered
// with (kubelet restarted). A missing kubelet.sock is not a reason (kubelet
// is down; its new socket will send another request).
func stale(sock string, own os.FileInfo, kubelet string, registeredWith os.FileInfo) bool {
	cur, err := os.Stat(sock)
	if err != nil || !sameFile(cur, own) {
		return true
	}
	k, err := os.Stat(kubelet)
	if err != nil {
		return false
	}
	return registeredWith == nil || !sameFile(k, registeredWith)
}

// sameFile also compares modification times: a file created right after
// another was removed may get its inode number.
func sameFile(a, b os.FileInfo) bool {
	return os.SameFile(a, b) && a.ModTime().Equal(b.ModTime())
}

// register announces the plugin to kubelet through kubelet.sock.
func (p *Plugin) register(ctx context.Context, kubelet string) error {
	conn, err := grpc.NewClient("unix://"+kubelet, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return fmt.Errorf("kubelet socket %s: %w", kubelet, err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	_, err = pluginapi.NewRegistrationClient(conn).Register(ctx, &pluginapi.RegisterRequest{
		Version:      pluginapi.Version,
		Endpoint:     SocketName(p.cfg.Resource),
		ResourceName: p.cfg.Resource,
		Options:      p.options(),
	})
	if err != nil {
		return fmt.Errorf("registering %s with kubelet at %s: %w", p.cfg.Resource, kubelet, err)
	}
	return nil
}

// SocketRemoved tells the plugin that its socket file may have been removed
// (kubelet wipes the directory when it restarts). If the plugin is serving
// and the file is really gone, it serves again on a new socket. Removals the
// plugin makes itself while stopping are ignored.
func (p *Plugin) SocketRemoved() {
	if !p.serving.Load() {
		return
	}
	if _, err := os.Stat(p.SocketPath()); errors.Is(err, os.ErrNotExist) {
		p.Restart()
	}
}
