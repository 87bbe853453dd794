package deviceplugin

import (
	"context"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/railyard-io/railyard/internal/alloc"
	"github.com/railyard-io/railyard/internal/containerdev"
	"github.com/railyard-io/railyard/internal/podresources"
	"github.com/railyard-io/railyard/internal/podresources/podlist"
	"github.com/railyard-io/railyard/internal/pool"
	"github.com/railyard-io/railyard/internal/topology"
)

// DefaultVanishedGrace is how long a device that disappeared stays
// advertised as Unhealthy before it is dropped from the list.
const DefaultVanishedGrace = 5 * time.Minute

// Device is a pool device plus the optional MAD device nodes of its port.
type Device struct {
	pool.Device
}

// GPUFinder finds the GPUs of the container being admitted.
type GPUFinder interface {
	PodGPUs(ctx context.Context, resource string) (podresources.Finding, error)
}

var _ GPUFinder = (*podresources.Finder)(nil)

// Metrics receives the plugin's measurements. A nil Metrics is allowed.
type Metrics interface {
	ObserveRPC(resource, method string, d time.Duration, err error)
	ObservePreferred(resource, policy string, classes []topology.Class)
	ObserveAllocate(resource string, devices int)
	SetRegistered(resource string, ok bool)
}

// Config configures one pool's plugin.
type Config struct {
	// Resource is the extended resource name ("railyard.io/rdma_vf_a").
	Resource string
	// PluginDir holds kubelet.sock; the plugin's socket is created there.
	PluginDir string
	// DevRoot is where device nodes live on the host ("/dev").
	DevRoot string
	// DevInfoDir receives device-info-spec files ("" = do not write).
	DevInfoDir string
	// Holders lists the devices kubelet holds (PodResources). With it, a
	// pool that allocates devices (no Binder) removes the device-info
	// files of devices kubelet no longer holds (devinfo.go); nil: only at
	// shutdown.
	Holders podlist.Lister
	// Nodes select the extra device nodes of Allocate (rdma_cm, umad, issm).
	Nodes containerdev.Options
	// CDIKind, when set, adds CDI device names "<CDIKind>=<id>".
	CDIKind string
	// Shared says the pool's devices are shares of NICs (IDs
	// "<pci>-s<k>"): GetPreferredAllocation spreads them over NICs.
	Shared bool
	// Groups, when set ("merged" mode), gives each container one NCCL
	// configuration for all its pools instead of NCCL_IB_HCA in Allocate's
	// environment. The agent's pools share one.
	Groups *RailGroups
	// NCCL is the agent's NCCL configuration (containerdev.Env's table
	// of NCCL settings; NCCL_CROSS_NIC among them).
	NCCL containerdev.NCCL
	// Policy chooses preferred allocations.
	Policy alloc.Policy
	// GPUs finds the pod's GPUs for gpu-aware (nil: never known).
	GPUs GPUFinder
	// Binder, when set, makes the pool a sandbox-binding pool: its devices
	// are tokens, Allocate returns a CDI device per token, and
	// PreStartContainer binds them (see tokens.go).
	Binder Binder
	// VanishedGrace: see DefaultVanishedGrace (0 = default).
	VanishedGrace time.Duration
	// Log receives the plugin's log lines (nil: discarded).
	Log *slog.Logger
	// Metrics receives measurements (nil: none).
	Metrics Metrics
	// Now is the clock (nil: time.Now).
	Now func() time.Time
}

type entry struct {
	dev        Device
	vanishedAt time.Time // zero while present
	health     string
}

// snapshot is an immutable view of the pool, replaced on every change.
type snapshot struct {
	topo    *topology.Topology
	devs    map[string]*entry
	list    []*pluginapi.Device
	key     string        // fingerprint of list
	changed chan struct{} // closed when a newer snapshot replaces this one
}

// Plugin serves one pool. Create it with New, feed it with Update and run
// it with Run.
type Plugin struct {
	cfg     Config
	restart chan struct{}
	serving atomic.Bool // registered with kubelet and serving on the socket
	devInfo devInfoFiles

	mu   sync.Mutex
	snap *snapshot
}

// New returns a plugin with no devices.
func New(cfg Config) *Plugin {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.VanishedGrace == 0 {
		cfg.VanishedGrace = DefaultVanishedGrace
	}
	if cfg.Metrics == nil {
		cfg.Metrics = nopMetrics{}
	}
	return &Plugin{
		cfg:     cfg,
		restart: make(chan struct{}, 1),
		devInfo: devInfoFiles{allocated: map[string]time.Time{}},
		snap:    &snapshot{devs: map[string]*entry{}, changed: make(chan struct{})},
	}
}

// Resource returns the plugin's resource name.
func (p *Plugin) Resource() string { return p.cfg.Resource }

// Update replaces the pool's devices and topology. Devices that were known
// and are gone stay advertised as Unhealthy for the vanished grace period.
// It returns true when the advertised list changed (ListAndWatch streams it).
func (p *Plugin) Update(topo *topology.Topology, devices []Device) bool {
	now := p.cfg.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	old := p.snap
	next := &snapshot{topo: topo, devs: make(map[string]*entry, len(devices)), changed: make(chan struct{})}
	for _, d := range devices {
		e := &entry{dev: d, health: pluginapi.Unhealthy}
		if d.Healthy {
			e.health = pluginapi.Healthy
		}
		next.devs[d.ID] = e
	}
	for id, e := range old.devs {
		if _, ok := next.devs[id]; ok {
			continue
		}
		gone := e.vanishedAt
		if gone.IsZero() {
			gone = now
		}
		if now.Sub(gone) < p.cfg.VanishedGrace {
			v := *e
			v.vanishedAt, v.health = gone, pluginapi.Unhealthy
			v.dev.Healthy, v.dev.Reason = false, "device disappeared"
			next.devs[id] = &v
		}
	}
	ids := make([]string, 0, len(next.devs))
	for id := range next.devs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	var key strings.Builder
	next.list = make([]*pluginapi.Device, 0, len(ids))
	for _, id := range ids {
		e := next.devs[id]
		pd := &pluginapi.Device{ID: id, Health: e.health}
		if e.dev.NUMA >= 0 {
			pd.Topology = &pluginapi.TopologyInfo{Nodes: []*pluginapi.NUMANode{{ID: int64(e.dev.NUMA)}}}
		}
		next.list = append(next.list, pd)
		key.WriteString(id + "|" + e.health + "|" + strconv.Itoa(e.dev.NUMA) + ";")
	}
	next.key = key.String()
	if next.key == old.key {
		// Same advertised list: keep the old channel so watchers stay
		// put, but take the new topology and device details.
		next.changed = old.changed
		p.snap = next
		return false
	}
	p.snap = next
	close(old.changed)
	return true
}

// Devices returns the advertised devices (ID and health), sorted by ID.
func (p *Plugin) Devices() []*pluginapi.Device {
	s := p.current()
	out := make([]*pluginapi.Device, len(s.list))
	copy(out, s.list)
	return out
}

func (p *Plugin) current() *snapshot {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.snap
}

// Restart makes Run re-create its socket and register again if kubelet
// restarted (kubelet.sock is a new file) or the plugin's socket was removed
// since it registered; a request with nothing new is dropped. It never
// blocks.
func (p *Plugin) Restart() {
	select {
	case p.restart <- struct{}{}:
	default:
	}
}

type nopMetrics struct{}

func (nopMetrics) ObserveRPC(string, string, time.Duration, error)   {}
func (nopMetrics) ObservePreferred(string, string, []topology.Class) {}
func (nopMetrics) ObserveAllocate(string, int)                       {}
func (nopMetrics) SetRegistered(string, bool)                        {}
