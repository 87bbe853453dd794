package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/kubernetes"

	"github.com/railyard-io/railyard/api/config/v1alpha1"
	"github.com/railyard-io/railyard/internal/alloc"
	"github.com/railyard-io/railyard/internal/binding"
	"github.com/railyard-io/railyard/internal/containerdev"
	"github.com/railyard-io/railyard/internal/deviceplugin"
	"github.com/railyard-io/railyard/internal/firmware"
	"github.com/railyard-io/railyard/internal/podresources"
	"github.com/railyard-io/railyard/internal/podresources/podlist"
	"github.com/railyard-io/railyard/internal/pool"
	"github.com/railyard-io/railyard/internal/porthealth"
	"github.com/railyard-io/railyard/internal/sysfs"
	"github.com/railyard-io/railyard/internal/topology"
)

// DiscoverFunc reads the node's topology from a sysfs root.
type DiscoverFunc func(ctx context.Context, root string) (*topology.Topology, error)

// poolPlugin is one configured pool and its device plugin.
type poolPlugin struct {
	cfg    v1alpha1.Pool
	sel    pool.Selector
	plugin *deviceplugin.Plugin
	// emptyState is what the last discovery found: unknown before the
	// first, so an empty pool is reported at start-up too.
	emptyState emptyState
}

// Agent serves every pool of a configuration. Create it with New.
type Agent struct {
	cfg      *v1alpha1.AgentConfig
	log      *slog.Logger
	discover DiscoverFunc
	metrics  *Metrics
	finder   *podresources.Finder
	pools    []*poolPlugin
	late     *lateBinding // nil when no pool binds late
	dra      *draState    // nil when no pool has delivery dra
	// kube is the API server client (nil without one: no dra pool, no
	// kubeconfig, not in a pod); set by run before Serve.
	kube kubernetes.Interface
	jobs podJobs // each pod's job, for the counters (watchPodJobs)
	// gids says when a pod's HCAs have their RoCE GIDs at different
	// indexes (nil: not set up, as by New alone); set by run before Serve.
	gids *gidEvents
	// tokensMu orders the token lists of sandbox pools: each is computed
	// and handed to its plugin under it, so a list computed before a bind
	// never replaces one computed after it (refreshes run concurrently).
	// Taken after mu, never before.
	tokensMu sync.Mutex

	// portHealth marks NICs degraded from their error counters at every
	// rediscovery (nil: errorCounters.window 0s); under mu.
	portHealth *porthealth.Tracker
	// firmware marks NICs refused at every rediscovery (the config's
	// firmware section; the zero policy refuses nothing).
	firmware firmware.Policy

	mu      sync.Mutex
	topo    *topology.Topology
	lastOK  time.Time
	lastErr error
	overlap string // last overlap warning, to log it once per change
}

// New builds the agent: one device plugin per devicePlugin pool with its
// policy, the DRA driver of the dra pools, the GPU finder over
// PodResources (with the GPU map when configured).
func New(cfg *v1alpha1.AgentConfig, log *slog.Logger, discover DiscoverFunc) (*Agent, error) {
	c := *cfg
	c.PluginDir = filepath.Clean(c.PluginDir)
	c.SysfsRoot = filepath.Clean(c.SysfsRoot)
	cfg = &c
	// Every device node handed to a container is below devRoot: a wrong
	// one (a typo, a host path not mounted) would start serving devices
	// no container can get. Refuse it at start.
	if st, err := os.Stat(cfg.DevRoot); err != nil {
		return nil, fmt.Errorf("devRoot: %w", err)
	} else if !st.IsDir() {
		return nil, fmt.Errorf("devRoot %s: not a directory", cfg.DevRoot)
	}
	a := &Agent{cfg: cfg, log: log, discover: discover, metrics: NewMetrics()}
	if ec := cfg.ErrorCounters; ec != nil && ec.Window != nil && ec.Window.Duration > 0 {
		pc := porthealth.Config{Window: ec.Window.Duration, LinkErrors: 1, Hold: 0}
		if ec.LinkErrors != nil {
			pc.LinkErrors = uint64(max(*ec.LinkErrors, 1))
		}
		if ec.Hold != nil {
			pc.Hold = ec.Hold.Duration
		}
		a.portHealth = porthealth.New(pc, sysfs.New(cfg.SysfsRoot))
	}
	if fw := cfg.Firmware; fw != nil {
		p, err := firmware.NewPolicy(fw.Minimum, fw.RefuseKnownIssues)
		if err != nil {
			return nil, fmt.Errorf("firmware: %w", err)
		}
		a.firmware = p
	}
	// GPU UUIDs from the NVIDIA driver's /proc files, the gpuMap file
	// overriding them; an unreadable driver file is only a warning.
	resolver, err := podresources.NewResolver(podresources.DefaultProcRoot, cfg.GPUMap)
	if resolver == nil {
		return nil, err
	}
	if err != nil {
		log.Warn("some GPU UUIDs are unknown", "err", err)
	}
	// One PodResources client (no gRPC: internal/podresources/podlist)
	// for the gpu-aware finder, rail groups and late binding.
	lister := podlist.New(cfg.PodResourcesSocket)
	a.finder = podresources.NewFinder(lister, resolver, cfg.GPUResourceNames)
	a.late = newLateBinding(cfg, lister, resolver, log, a.metrics.reg, binding.Options{})
	a.registerCounters(lister)
	groups, err := railGroups(cfg, lister)
	if err != nil {
		return nil, err
	}
	if a.dra, err = newDRA(cfg, logr.FromSlogHandler(log.Handler()), a.metrics); err != nil {
		return nil, err
	}
	for _, pc := range cfg.Pools {
		if pc.Delivery == v1alpha1.DeliveryDRA {
			continue // the DRA kubelet plugin's, never the device plugin's too
		}
		sel, err := pool.Compile(pc)
		if err != nil {
			return nil, err
		}
		pol, err := alloc.ByName(pc.Policy)
		if err != nil {
			return nil, fmt.Errorf("pool %s: %w", pc.Name, err)
		}
		p := deviceplugin.New(deviceplugin.Config{
			Resource: pc.Name, PluginDir: cfg.PluginDir, DevRoot: cfg.DevRoot, DevInfoDir: cfg.DevInfoDir, Holders: lister,
			Nodes: containerdev.NewOptions(pc.DeviceNodes.RDMACM, pc.DeviceNodes.UMAD, pc.DeviceNodes.ISSM), CDIKind: pc.CDIKind,
			Policy: pol, GPUs: a.finder, Log: log, Metrics: a.metrics,
			Shared: pc.DeviceKind == v1alpha1.KindShared, Groups: groups, Binder: a.binderFor(pc), NCCL: ncclOptions(cfg),
		})
		a.pools = append(a.pools, &poolPlugin{cfg: pc, sel: sel, plugin: p})
	}
	return a, nil
}

// Plugins returns the pools' plugins, in configuration order.
func (a *Agent) Plugins() []*deviceplugin.Plugin {
	out := make([]*deviceplugin.Plugin, len(a.pools))
	for i, p := range a.pools {
		out[i] = p.plugin
	}
	return out
}

// Rediscover reads the topology again and updates every pool. A failed
// discovery keeps the previous devices (and is reported by /healthz).
func (a *Agent) Rediscover(ctx context.Context, why string) error {
	start := time.Now()
	topo, err := a.discover(ctx, a.cfg.SysfsRoot)
	a.metrics.ObserveDiscovery(time.Since(start), err)
	a.mu.Lock()
	defer a.mu.Unlock()
	if err != nil {
		a.lastErr = err
		a.log.Error("discovery failed; keeping the previous devices", "why", why, "err", err)
		return err
	}
	a.markDegraded(topo)
	a.markRefused(topo)
	a.metrics.SetNICMarks(topo, a.portHealth != nil)
	a.topo, a.lastErr, a.lastOK = topo, nil, time.Now()
	owner := map[string]string{}
	var overlaps []string
	for _, pp := range a.pools {
		devs := a.devices(pp, topo)
		for _, d := range devs {
			if other, dup := owner[d.ID]; dup {
				overlaps = append(overlaps, d.ID+" in "+other+" and "+pp.cfg.Name)
			}
			owner[d.ID] = pp.cfg.Name
		}
		changed := a.updatePlugin(pp, topo, devs)
		healthy := 0
		for _, d := range pp.plugin.Devices() {
			if d.Health == "Healthy" {
				healthy++
			}
		}
		total := len(pp.plugin.Devices())
		a.metrics.SetPoolDevices(pp.cfg.Name, healthy, total-healthy)
		a.noteEmpty(pp, topo, len(devs) == 0)
		if changed {
			a.log.Info("pool changed", "resource", pp.cfg.Name, "why", why, "devices", total, "healthy", healthy)
			for _, d := range devs {
				if !d.Healthy {
					a.log.Info("device unhealthy", "resource", pp.cfg.Name, "device", d.ID, "reason", d.Reason)
				}
			}
		}
	}
	if o := strings.Join(overlaps, "; "); o != a.overlap {
		a.overlap = o
		if o != "" {
			a.metrics.Warning(warningPoolsOverlap)
			a.log.Warn("pools overlap: a device served by two pools can be given to two pods", "devices", o)
		}
	}
	a.publishBindingView(ctx)
	if a.dra != nil {
		if err := a.updateDRA(ctx, topo, why); err != nil {
			// The DRA pools stay as last published; /healthz fails.
			a.lastErr = err
			a.log.Error("DRA pools not updated", "why", why, "err", err)
			return err
		}
	}
	a.log.Debug("discovered", "why", why, "took", time.Since(start), "nics", len(topo.NICs), "gpus", len(topo.GPUs))
	return nil
}

// markDegraded writes the error counters' verdict into t's NICs
// (topology.NIC.Degraded, which their health reads) and logs each change.
func (a *Agent) markDegraded(t *topology.Topology) {
	if a.portHealth == nil {
		return
	}
	marks := a.portHealth.Observe(t, time.Now())
	var before map[string]string
	if a.topo != nil {
		before = map[string]string{}
		for _, n := range a.topo.NICs {
			if n.Degraded != "" {
				before[n.PCI] = n.Degraded
			}
		}
	}
	for i := range t.NICs {
		n := &t.NICs[i]
		n.Degraded = marks[n.PCI]
		switch was := before[n.PCI]; {
		case n.Degraded != "" && was == "":
			a.log.Warn("NIC degraded by its error counters: its devices are unhealthy until they stop rising", "nic", n.Name(), "pci", n.PCI, "reason", n.Degraded)
		case n.Degraded == "" && was != "":
			a.log.Info("NIC no longer degraded: no counted error rise for errorCounters.hold", "nic", n.Name(), "pci", n.PCI)
		}
	}
}

// markRefused writes the firmware policy's verdict into t's NICs
// (topology.NIC.Refused, which their health reads) and logs each change.
// A firmware version that cannot be read is never refused.
func (a *Agent) markRefused(t *topology.Topology) {
	before := map[string]string{}
	if a.topo != nil {
		for _, n := range a.topo.NICs {
			before[n.PCI] = n.Refused
		}
	}
	for i := range t.NICs {
		n := &t.NICs[i]
		n.Refused = a.firmware.Refused(firmware.Model{Vendor: n.Vendor, Device: n.Device}, n.Firmware)
		switch was := before[n.PCI]; {
		case n.Refused != "" && n.Refused != was:
			a.log.Warn("NIC refused by the firmware policy: its devices are unhealthy until it runs an accepted release", "nic", n.Name(), "pci", n.PCI, "reason", n.Refused)
		case n.Refused == "" && was != "":
			a.log.Info("NIC no longer refused by the firmware policy", "nic", n.Name(), "pci", n.PCI, "firmware", n.Firmware)
		}
	}
}

// devices selects a pool's devices.
func (a *Agent) devices(pp *poolPlugin, topo *topology.Topology) []deviceplugin.Device {
	sel := pp.sel.Select(topo)
	out := make([]deviceplugin.Device, len(sel))
	for i, d := range sel {
		out[i] = deviceplugin.Device{Device: d}
	}
	return out
}

// Topology returns the last discovered topology (nil before the first).
func (a *Agent) Topology() *topology.Topology {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.topo
}

// health reports whether the agent is healthy: the last discovery worked
// and is recent.
func (a *Agent) health() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.lastErr != nil {
		return fmt.Errorf("last discovery failed: %w", a.lastErr)
	}
	if a.lastOK.IsZero() {
		return errors.New("no discovery yet")
	}
	if limit := staleAfter(a.cfg.ResyncInterval.Duration); time.Since(a.lastOK) > limit {
		return fmt.Errorf("no successful discovery for %s", time.Since(a.lastOK).Round(time.Second))
	}
	return nil
}
