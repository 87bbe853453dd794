package draplugin

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"reflect"
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/dynamic-resource-allocation/resourceslice"

	"github.com/railyard-io/railyard/api/config/v1alpha1"
	"github.com/railyard-io/railyard/internal/atomicfile"
	"github.com/railyard-io/railyard/internal/containerdev"
	"github.com/railyard-io/railyard/internal/dra"
	"github.com/railyard-io/railyard/internal/draview"
	"github.com/railyard-io/railyard/internal/topology"
)

// CDIKind is the CDI kind of the devices the driver prepares: the
// container of a claim with UID U gets "rdma.railyard.io/claim=U-<device>".
const CDIKind = dra.DriverName + "/claim"

// CheckpointFile is the name of the checkpoint in Config.StateDir.
const CheckpointFile = "dra-claims.json"

// ErrNotReady is returned by Prepare before the first topology.
var ErrNotReady = errors.New("no topology yet")

// Config is what a Driver serves.
type Config struct {
	// NodeName is this node's name: the DRA pools are "<node>/<pool>".
	NodeName string
	// Pools are the pools delivered through DRA (delivery "dra").
	Pools []v1alpha1.Pool
	// DevRoot holds infiniband/uverbsN and rdma_cm on the host ("/dev").
	DevRoot string
	// CDISpecDir is where the per-claim CDI specs are written
	// ("/var/run/cdi").
	CDISpecDir string
	// StateDir holds the checkpoint of prepared claims.
	StateDir string
	// ViewDir receives the DRA view railyard-cni reads (internal/draview:
	// the pools, each prepared claim's pods and devices): the binding
	// directory, which railyard-cni's bindingDir names. "" publishes none.
	ViewDir string
	// NCCL is the agent's NCCL configuration (containerdev.Env's table
	// of NCCL settings; NCCL_CROSS_NIC among them).
	NCCL containerdev.NCCL
	// OnError receives the errors of the helper's background work
	// (publishing slices); nil drops them. fatal is true when retrying
	// will not help (kubeletplugin.ErrRecoverable is not wrapped).
	OnError func(ctx context.Context, err error, msg string, fatal bool)
	// Observe receives how long each NodePrepareResources and
	// NodeUnprepareResources call of kubelet took ("prepare",
	// "unprepare") and whether a claim of it failed; nil drops it.
	Observe func(method string, d time.Duration, failed bool)
}

// Publisher publishes ResourceSlices: *kubeletplugin.Helper.
type Publisher interface {
	PublishResources(ctx context.Context, resources resourceslice.DriverResources) error
}

var _ Publisher = (*kubeletplugin.Helper)(nil)
var _ kubeletplugin.DRAPlugin = (*Driver)(nil)

// Driver is the DRA driver rdma.railyard.io of one node. Create it with
// New; it is safe for concurrent use.
type Driver struct {
	cfg      Config
	poolCfg  map[string]v1alpha1.Pool // by resource name
	ckptPath string

	mu        sync.Mutex
	topo      *topology.Topology
	leaves    map[string]string // dra.Options.Leaves (SetLeaves)
	pools     []dra.Pool
	published *resourceslice.DriverResources // last handed to pub
	pub       Publisher
	claims    map[types.UID]*preparedClaim
	lastErr   error
	view      []byte // the DRA view last written
	// features are what the API server keeps (SetServerFeatures).
	features ServerFeatures
	// builtAt is when the pools were last built: each device's health
	// dates from it.
	builtAt time.Time
	// healthChanged is closed (and replaced) when the pools change:
	// WatchHealthStatus then reports at once.
	healthChanged chan struct{}
	// applied is, per claim, the status entries last found or written
	// (statusKey): SyncStatus writes only what changed.
	applied map[types.UID]string
	// meta updates the workload's metadata files (the kubelet plugin
	// helper, once Serve runs it).
	meta MetadataUpdater
}

// MetadataUpdater rewrites a prepared request's KEP-5304 metadata file:
// *kubeletplugin.Helper.
type MetadataUpdater interface {
	UpdateRequestMetadata(ctx context.Context, claimNamespace, claimName string, claimUID types.UID, requestName string, devices []kubeletplugin.Device) error
}

var _ MetadataUpdater = (*kubeletplugin.Helper)(nil)

// New returns a driver with the prepared claims of its checkpoint (an
// agent restart keeps them). A checkpoint that cannot be read is an
// error: starting empty would forget devices that pods hold.
func New(cfg Config) (*Driver, error) {
	if cfg.NodeName == "" {
		return nil, errors.New("draplugin: no node name")
	}
	if cfg.StateDir == "" || cfg.CDISpecDir == "" {
		return nil, errors.New("draplugin: a state directory and a CDI spec directory are required")
	}
	d := &Driver{cfg: cfg, poolCfg: map[string]v1alpha1.Pool{}, ckptPath: filepath.Join(cfg.StateDir, CheckpointFile),
		healthChanged: make(chan struct{}), applied: map[types.UID]string{}}
	for _, p := range cfg.Pools {
		d.poolCfg[p.Name] = p
	}
	claims, err := loadCheckpoint(d.ckptPath)
	if err != nil {
		return nil, err
	}
	d.claims = claims
	if cfg.ViewDir != "" {
		atomicfile.RemoveTemps(draview.Path(cfg.ViewDir))
	}
	// The view follows the checkpoint (an agent upgraded from a version
	// without it, or a view lost with its directory, gets it back).
	if err := d.publishViewLocked(); err != nil {
		return nil, err
	}
	return d, nil
}

// SetPublisher makes the driver publish its slices through p (the
// kubelet plugin helper once it runs) and publishes what it has.
func (d *Driver) SetPublisher(ctx context.Context, p Publisher) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.pub, d.published = p, nil
	return d.publishLocked(ctx)
}

// Update rebuilds the node's pools from a new topology (rediscovery)
// and publishes them when they changed. Devices that prepared claims hold
// stay published as they were while out of the host's view
// (dra.Options.Prepared).
func (d *Driver) Update(ctx context.Context, t *topology.Topology) ([]dra.Pool, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.rebuildLocked(ctx, t, d.leaves)
}

// SetLeaves sets the leaf switch of each NIC (dra.Options.Leaves: the
// node's fabric ports, which the agent watches) and, once the driver has
// a topology, rebuilds and republishes the pools. nil clears them. It
// reports whether the leaves changed: the same leaves again (every update
// of the Node) rebuild nothing.
func (d *Driver) SetLeaves(ctx context.Context, leaves map[string]string) (changed bool, err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if maps.Equal(d.leaves, leaves) {
		return false, nil
	}
	if d.topo == nil {
		d.leaves = leaves
		return true, nil
	}
	if _, err := d.rebuildLocked(ctx, d.topo, leaves); err != nil {
		return false, err
	}
	return true, nil
}

// rebuildLocked builds the pools of t with leaves and publishes them; the
// driver keeps t and leaves only when they built.
func (d *Driver) rebuildLocked(ctx context.Context, t *topology.Topology, leaves map[string]string) ([]dra.Pool, error) {
	pools, err := dra.Build(d.cfg.NodeName, t, d.cfg.Pools, dra.Options{Prepared: d.preparedLocked(), Leaves: leaves,
		TaintUnhealthy: d.features.Taints, ConsumableCapacity: d.features.ConsumableCapacity})
	if err != nil {
		return nil, fmt.Errorf("draplugin: %w", err)
	}
	d.topo, d.leaves, d.pools, d.builtAt = t, leaves, pools, time.Now()
	d.notifyHealthLocked()
	return pools, d.publishLocked(ctx)
}

func (d *Driver) publishLocked(ctx context.Context) error {
	if d.pub == nil || d.topo == nil {
		return nil
	}
	res := dra.DriverResources(d.pools)
	if d.published != nil && reflect.DeepEqual(*d.published, res) {
		return nil
	}
	if err := d.pub.PublishResources(ctx, res); err != nil {
		return fmt.Errorf("draplugin: publishing slices: %w", err)
	}
	d.published = &res
	return nil
}

// Pools returns the pools last built (nil before the first Update).
func (d *Driver) Pools() []dra.Pool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.pools
}

// Prepared returns the UIDs of the prepared claims and their devices'
// PCI addresses.
func (d *Driver) Prepared() map[types.UID][]string {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make(map[types.UID][]string, len(d.claims))
	for uid, c := range d.claims {
		for _, pd := range c.Devices {
			out[uid] = append(out[uid], pd.PCI)
		}
	}
	return out
}

// HandleError is the helper's report of a background error (publishing
// slices): kept for LastError and passed to Config.OnError.
func (d *Driver) HandleError(ctx context.Context, err error, msg string) {
	d.mu.Lock()
	d.lastErr = fmt.Errorf("%s: %w", msg, err)
	d.mu.Unlock()
	d.mu.Lock()
	f, changed := d.features.dropped(err)
	d.mu.Unlock()
	if changed {
		// The server stopped keeping taints or consumable capacity
		// (probed before): leave unhealthy devices and shared NICs out
		// again. In a goroutine: the controller reporting this may hold
		// what publishing needs.
		go func() {
			if err := d.SetServerFeatures(context.WithoutCancel(ctx), f); err != nil {
				d.HandleError(ctx, err, "publishing without the DRA features the API server dropped")
			}
		}()
	}
	if d.cfg.OnError != nil {
		d.cfg.OnError(ctx, err, msg, !errors.Is(err, kubeletplugin.ErrRecoverable))
	}
}

// LastError is the last background error HandleError got (nil if none).
func (d *Driver) LastError() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.lastErr
}

// hasSharedPool says whether a pool of the driver is shared.
func (d *Driver) hasSharedPool() bool {
	return slices.ContainsFunc(d.cfg.Pools, func(p v1alpha1.Pool) bool { return p.DeviceKind == v1alpha1.KindShared })
}

// observe reports a kubelet call to Config.Observe.
func (d *Driver) observe(method string, start time.Time, failed bool) {
	if d.cfg.Observe != nil {
		d.cfg.Observe(method, time.Since(start), failed)
	}
}
