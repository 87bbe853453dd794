package agent

import (
	"context"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/railyard-io/railyard/internal/deviceplugin"
	"github.com/railyard-io/railyard/internal/discovery"
)

// debounce is how long the watcher waits for a burst of events to end
// before it rediscovers (creating VFs touches hundreds of files).
const debounce = 100 * time.Millisecond

// watcher keeps fsnotify watches on the sysfs paths of the current model
// and on the plugin directory.
type watcher struct {
	fs      *fsnotify.Watcher
	watched map[string]bool
}

func newWatcher(pluginDir string) (*watcher, error) {
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, err
	}
	w := &watcher{fs: fw, watched: map[string]bool{}}
	if err := fw.Add(pluginDir); err != nil {
		fw.Close()
		return nil, err
	}
	return w, nil
}

// sync makes the sysfs watches match paths. Paths that cannot be watched
// (missing) are skipped: the periodic resync covers them.
func (w *watcher) sync(paths []string) {
	want := make(map[string]bool, len(paths))
	for _, p := range paths {
		want[p] = true
		if !w.watched[p] {
			if err := w.fs.Add(p); err == nil {
				w.watched[p] = true
			}
		}
	}
	for p := range w.watched {
		if !want[p] {
			_ = w.fs.Remove(p)
			delete(w.watched, p)
		}
	}
}

// loop rediscovers on sysfs events (debounced) and every resync interval,
// and restarts plugins when kubelet.sock is recreated or a plugin's socket
// disappears. It returns when ctx is done.
func (a *Agent) loop(ctx context.Context, w *watcher) {
	resync := time.NewTicker(a.cfg.ResyncInterval.Duration)
	defer resync.Stop()
	var poll <-chan time.Time
	if d := a.cfg.PortPollInterval; d != nil && d.Duration > 0 {
		t := time.NewTicker(d.Duration)
		defer t.Stop()
		poll = t.C
	}
	var pending <-chan time.Time
	kubeletSock := filepath.Join(a.cfg.PluginDir, deviceplugin.KubeletSocket)
	sockets := map[string]*deviceplugin.Plugin{}
	for _, pp := range a.pools {
		sockets[pp.plugin.SocketPath()] = pp.plugin
	}
	rediscover := func(why string) {
		_ = a.Rediscover(ctx, why)
		w.sync(discovery.WatchPaths(a.cfg.SysfsRoot, a.Topology()))
	}
	w.sync(discovery.WatchPaths(a.cfg.SysfsRoot, a.Topology()))
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-w.fs.Events:
			if !ok {
				return
			}
			switch {
			case ev.Name == kubeletSock && ev.Has(fsnotify.Create):
				a.log.Info("kubelet.sock recreated: kubelet restarted, registering again")
				a.metrics.kubeletRestarts.Inc()
				if a.late != nil {
					a.late.kubeletRestarted()
				}
				for _, pp := range a.pools {
					pp.plugin.Restart()
				}
			case sockets[ev.Name] != nil:
				if ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename) {
					sockets[ev.Name].SocketRemoved()
				}
			case filepath.Dir(ev.Name) == a.cfg.PluginDir:
				// other plugins' sockets
			default:
				if pending == nil {
					pending = time.After(debounce)
				}
			}
		case err, ok := <-w.fs.Errors:
			if !ok {
				return
			}
			a.log.Warn("file watch error; relying on the periodic resync", "err", err)
		case <-pending:
			pending = nil
			rediscover("sysfs changed")
		case <-poll:
			if port, changed := discovery.ChangedPort(a.cfg.SysfsRoot, a.Topology()); changed {
				rediscover("port state changed: " + port)
			}
		case <-resync.C:
			rediscover("periodic resync")
			a.primeFinder(ctx)
			a.collectBindings(ctx)
		}
	}
}

func (a *Agent) primeFinder(ctx context.Context) {
	names := make([]string, len(a.pools))
	for i, pp := range a.pools {
		names[i] = pp.cfg.Name
	}
	if err := a.finder.Prime(ctx, names); err != nil {
		a.log.Debug("pod resources not readable yet", "err", err)
	}
}
