package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/railyard-io/railyard/api/config/v1alpha1"
	"github.com/railyard-io/railyard/internal/binding"
	"github.com/railyard-io/railyard/internal/containerdev"
	"github.com/railyard-io/railyard/internal/deviceplugin"
	"github.com/railyard-io/railyard/internal/podresources"
	"github.com/railyard-io/railyard/internal/podresources/podlist"
	"github.com/railyard-io/railyard/internal/pool"
	"github.com/railyard-io/railyard/internal/topology"
)

// BindingDir is the binding store under the agent's stateDir; railyard-cni
// reads the same directory (its bindingDir, /var/lib/railyard/binding by
// default).
func BindingDir(stateDir string) string { return filepath.Join(stateDir, "binding") }

// heldFor is how long a token Allocate handed out counts as held by
// kubelet before PodResources shows it.
const heldFor = time.Minute

// lateBinding is the agent's side of late binding: it publishes the node
// view for binders, turns each sandbox pool's devices into tokens, binds
// at PreStartContainer, and collects the bindings of ended pods.
type lateBinding struct {
	cfg      *v1alpha1.AgentConfig
	store    *binding.Store
	binder   *binding.Binder
	lister   podlist.Lister
	resolver podresources.Map
	log      *slog.Logger
	m        *bindingMetrics

	mu    sync.Mutex
	pools map[string]binding.Pool // latest devices of each sandbox pool
	topo  *topology.Topology
	held  map[string]time.Time // tokens Allocate handed out, until PodResources lists them
	// listed are the tokens the last PodResources list showed held.
	listed map[string]bool
	// refresh recomputes the pools' tokens (set by the agent).
	refresh func()
	// reaper decides which bindings GC releases (binding.Reaper), its
	// Grace unheldGrace.
	reaper binding.Reaper

	// The early binder's state (earlybind.go): when kubelet last
	// allocated each token, and the list time of the early bind made
	// after that (a token waits while neither is older than earlyFor).
	wake                    chan struct{}
	allocatedAt, boundAfter map[string]time.Time
	// earlyFor is how long tokens wait for an early bind
	// (defaultEarlyFor; tests that need an early bind on a loaded
	// machine set it longer, under mu).
	earlyFor time.Duration
	// refused are the pools that bind nothing (resource -> why), and
	// recovered whether lost bindings were looked for once (recover.go).
	refused   map[string]string
	recovered bool
	// publishErr is the last failure to publish the view (nil once one
	// succeeded): binders then see only that there is no view.
	publishErr error

	// inFlight are the tokens of early binds under way (startEarly):
	// closed once the bind's outcome is recorded.
	inFlight map[string]chan struct{}
}

// unheldGrace is how long a bound token must stay held by no pod in
// PodResources before GC releases it (binding.Reaper's Grace): a resync
// interval, at least 5 s.
func unheldGrace(cfg *v1alpha1.AgentConfig) time.Duration {
	return max(cfg.ResyncInterval.Duration, 5*time.Second)
}

// kubeletRestarted starts every binding's grace again (binding.Reaper).
func (b *lateBinding) kubeletRestarted() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.reaper.KubeletRestarted()
}

var _ deviceplugin.Binder = (*lateBinding)(nil)

// newLateBinding returns nil when no pool binds late. storeOpt configures
// the binding store (the zero value in production).
func newLateBinding(cfg *v1alpha1.AgentConfig, lister podlist.Lister, resolver podresources.Map, log *slog.Logger, reg *prometheus.Registry, storeOpt binding.Options) *lateBinding {
	late := false
	for _, p := range cfg.Pools {
		late = late || p.Binding == v1alpha1.BindingSandbox
	}
	if !late {
		return nil
	}
	store := binding.NewStore(BindingDir(cfg.StateDir), storeOpt)
	m := newBindingMetrics(reg, store.Bindings)
	return &lateBinding{
		cfg: cfg, store: store, binder: &binding.Binder{Store: store, Lister: lister}, lister: lister, resolver: resolver,
		log: log, m: m, pools: map[string]binding.Pool{}, held: map[string]time.Time{}, listed: map[string]bool{},
		wake: make(chan struct{}, 1), allocatedAt: map[string]time.Time{}, boundAfter: map[string]time.Time{},
		inFlight: map[string]chan struct{}{}, earlyFor: defaultEarlyFor, reaper: binding.Reaper{Grace: unheldGrace(cfg)},
	}
}

// BindTokens implements deviceplugin.Binder (PreStartContainer). Tokens
// the early binder bound from a list taken after their Allocate need
// nothing more (see earlybind.go); the others are bound here.
func (b *lateBinding) BindTokens(ctx context.Context, resource string, tokens []string) error {
	start := time.Now()
	if b.boundEarly(ctx, tokens) {
		b.m.observeBind("prestart-bound", time.Since(start), nil)
		return nil
	}
	if err := b.ensureRecovered(ctx); err != nil {
		b.m.observeBind("prestart", time.Since(start), err)
		return err
	}
	res, err := b.binder.BindTokens(ctx, tokens, binding.ByAgent)
	took := time.Since(start)
	b.m.observeBind("prestart", took, err)
	if err != nil {
		return b.explain(err)
	}
	b.logBound(res, "prestart", took, res.Took.List)
	b.afterBind(res)
	return nil
}

// explain adds why the view is missing to a bind's ErrNoView: kubelet
// shows PreStartContainer's error, and "not published yet" reads like a
// start-up race when the state directory is full or read-only.
func (b *lateBinding) explain(err error) error {
	if !errors.Is(err, binding.ErrNoView) {
		return err
	}
	b.mu.Lock()
	perr := b.publishErr
	b.mu.Unlock()
	if perr == nil {
		return err
	}
	return fmt.Errorf("%w (the agent failed to publish it: %w)", err, perr)
}

// logBound logs what a bind did (at: prestart or early).
func (b *lateBinding) logBound(res binding.Result, at string, took, list time.Duration) {
	b.m.released(binding.ReasonReassigned, len(res.Released))
	b.m.released(binding.ReasonPodGone, len(res.Collected))
	for _, n := range res.Notes {
		b.log.Warn("late binding", "note", n)
	}
	if res.Bound == 0 {
		return
	}
	for _, bd := range res.Bindings {
		b.log.Info("token bound", "resource", bd.Resource, "token", bd.Token, "device", bd.Device, "pod", bd.Pod.String(),
			"container", bd.Container, "gpus", bd.GPUs, "class", bd.Class, "by", binding.ByAgent, "at", at, "took", took,
			"list", list, "lockWait", res.Took.LockWait, "locked", res.Took.Locked)
	}
}

// afterBind refreshes the advertised tokens, off kubelet's path (the
// container waits for PreStartContainer).
func (b *lateBinding) afterBind(res binding.Result) {
	if res.Bound == 0 || b.refresh == nil {
		return
	}
	go b.refresh()
}

// Allocated implements deviceplugin.Binder: the tokens count as held, and
// the early binder watches for their pod.
func (b *lateBinding) Allocated(_ string, tokens []string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := time.Now()
	for _, t := range tokens {
		b.held[t] = now
	}
	b.allocatedTokensLocked(tokens, now)
}

// inUse is what kubelet holds: listed by PodResources, or handed out by
// Allocate within heldFor.
func (b *lateBinding) inUse() map[string]bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make(map[string]bool, len(b.listed)+len(b.held))
	for t := range b.listed {
		out[t] = true
	}
	for t, at := range b.held {
		if time.Since(at) < heldFor {
			out[t] = true
		} else {
			delete(b.held, t)
		}
	}
	return out
}

// setPool records a sandbox pool's devices from a discovery.
func (b *lateBinding) setPool(pc v1alpha1.Pool, topo *topology.Topology, devs []deviceplugin.Device) {
	nodes := containerdev.NewOptions(pc.DeviceNodes.RDMACM, pc.DeviceNodes.UMAD, pc.DeviceNodes.ISSM)
	p := binding.Pool{Resource: pc.Name, Tag: binding.PoolTag(pc.Name), Policy: pc.Policy,
		RDMACM: nodes.RDMACM, UMAD: nodes.UMAD, ISSM: nodes.ISSM}
	for _, d := range devs {
		p.Devices = append(p.Devices, binding.Device{ID: d.ID, PF: d.PF, NUMA: d.NUMA, Rail: d.Rail, RDMA: d.RDMA,
			Uverbs: d.Uverbs, UMAD: d.UMAD, ISSM: d.ISSM, Healthy: d.Healthy, Reason: d.Reason})
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.pools[pc.Name] = p
	b.topo = topo
}

// tokens returns the devices (tokens) a sandbox pool advertises now.
func (b *lateBinding) tokens(pc v1alpha1.Pool) []deviceplugin.Device {
	b.mu.Lock()
	p, ok := b.pools[pc.Name]
	b.mu.Unlock()
	if !ok {
		return nil
	}
	bs, err := b.store.Bindings()
	if err != nil {
		b.log.Error("reading bindings: advertising every token of the pool as unbound", "resource", pc.Name, "err", err)
	}
	ts := binding.Tokens(&p, bs, b.inUse())
	out := make([]deviceplugin.Device, len(ts))
	for i, t := range ts {
		out[i] = deviceplugin.Device{Device: pool.Device{ID: t.ID, Kind: pc.DeviceKind, Share: -1, Rail: -1, VFIndex: -1,
			NUMA: t.NUMA, Healthy: t.Healthy, Reason: t.Reason, PF: t.Device}}
	}
	return out
}

// publish writes the node view for binders (railyard-cni reads it).
func (b *lateBinding) publish(ctx context.Context) error {
	b.mu.Lock()
	if b.topo == nil {
		b.mu.Unlock()
		return nil
	}
	v := binding.ViewFromTopology(b.topo)
	for _, pc := range b.cfg.Pools {
		if p, ok := b.pools[pc.Name]; ok {
			p.Refused = b.refused[pc.Name]
			v.Pools = append(v.Pools, p)
		}
	}
	b.mu.Unlock()
	v.PodResourcesSocket = b.cfg.PodResourcesSocket
	v.GPUResourceNames = b.cfg.GPUResourceNames
	v.GPUMap = b.resolver
	v.CDISpecDir = b.cfg.CDISpecDir
	v.DevRoot = b.cfg.DevRoot
	v.DevInfoDir = b.cfg.DevInfoDir
	v.NCCLIBHCA = true
	v.NCCL = ncclOptions(b.cfg)
	err := b.store.Publish(ctx, v)
	b.mu.Lock()
	b.publishErr = err
	b.mu.Unlock()
	return err
}

// collect releases the bindings of pods kubelet no longer lists, heals
// files (Reconcile), and records what kubelet holds.
func (b *lateBinding) collect(ctx context.Context) {
	_, pods, h, err := b.snapshot(ctx)
	if err != nil {
		b.log.Debug("bindings not collected", "err", err)
		return
	}
	keep, recovered := b.recoverHeld(ctx, pods, h)
	release := b.gone(h)
	gone, err := b.store.ReleaseIf(ctx, func(bd binding.Binding) bool {
		pod, ok := release[bd.Token]
		return ok && bd.Pod == pod && h.Postdates(bd)
	})
	if err != nil {
		b.log.Error("collecting bindings of ended pods", "err", err)
	}
	for _, g := range gone {
		b.log.Info("binding released: pod ended", "resource", g.Resource, "token", g.Token, "device", g.Device, "pod", g.Pod.String())
	}
	b.m.released(binding.ReasonPodGone, len(gone))
	if !recovered {
		b.log.Warn("binding files not reconciled: lost bindings could not be recovered first")
	} else if err := b.store.Reconcile(ctx, keep...); err != nil {
		b.log.Error("reconciling binding files", "err", err)
	}
	b.mu.Lock()
	b.listed = map[string]bool{}
	for t := range h.Pods {
		b.listed[t] = true
		// PodResources shows who holds it now: Allocate's hold, which
		// bridged the time until it did, would outlive the pod.
		if at, ok := b.held[t]; ok && at.Before(h.At) {
			delete(b.held, t)
		}
	}
	b.mu.Unlock()
	if len(gone) > 0 && b.refresh != nil {
		b.refresh()
	}
}

// snapshot reads the view and lists PodResources, with who holds each
// token at the list (Holders.At is when the list was asked for).
func (b *lateBinding) snapshot(ctx context.Context) (*binding.View, []podlist.Pod, binding.Holders, error) {
	v, err := b.store.View()
	if err != nil {
		return nil, nil, binding.Holders{}, fmt.Errorf("no binding view yet: %w", err)
	}
	at, boot := b.store.Now()
	lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	pods, err := b.lister.List(lctx)
	cancel()
	if err != nil {
		return nil, nil, binding.Holders{}, fmt.Errorf("pod resources not readable: %w", err)
	}
	h := binding.HoldersFrom(pods, v, at)
	h.Boot = boot
	return v, pods, h, nil
}

// gone returns the bindings to release (token -> pod), as binding.Reaper
// decides from this list and the ones before.
func (b *lateBinding) gone(h binding.Holders) map[string]binding.PodRef {
	bs, err := b.store.Bindings()
	if err != nil {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.reaper.Due(bs, h)
}

// binderFor is the binder of a sandbox pool (nil otherwise: a typed nil
// would make the plugin think it binds).
func (a *Agent) binderFor(pc v1alpha1.Pool) deviceplugin.Binder {
	if a.late == nil || pc.Binding != v1alpha1.BindingSandbox {
		return nil
	}
	return a.late
}

// updatePlugin feeds a pool's devices to its plugin: the devices, or for a
// sandbox pool its tokens. It reports whether the advertised list changed.
func (a *Agent) updatePlugin(pp *poolPlugin, topo *topology.Topology, devs []deviceplugin.Device) bool {
	if a.late == nil || pp.cfg.Binding != v1alpha1.BindingSandbox {
		return pp.plugin.Update(topo, devs)
	}
	a.late.setPool(pp.cfg, topo, devs)
	a.tokensMu.Lock()
	defer a.tokensMu.Unlock()
	ts := a.late.tokens(pp.cfg)
	changed := pp.plugin.Update(topo, ts)
	if changed {
		a.logTokens(pp.cfg.Name, ts)
	}
	return changed
}

// refreshTokens recomputes the tokens of every sandbox pool (after binds
// and releases change which are bound).
func (a *Agent) refreshTokens() {
	topo := a.Topology()
	a.tokensMu.Lock()
	defer a.tokensMu.Unlock()
	for _, pp := range a.pools {
		if pp.cfg.Binding != v1alpha1.BindingSandbox {
			continue
		}
		ts := a.late.tokens(pp.cfg)
		if pp.plugin.Update(topo, ts) {
			a.logTokens(pp.cfg.Name, ts)
		}
	}
}

// logTokens logs (debug) a changed token list: how many are healthy, why
// each other one is not, and each token with its bound device.
func (a *Agent) logTokens(resource string, ts []deviceplugin.Device) {
	// Refreshes follow every bind: build the lines only for a debug log.
	if !a.log.Enabled(context.Background(), slog.LevelDebug) {
		return
	}
	healthy := 0
	var sick, ids []string
	for _, t := range ts {
		ids = append(ids, t.ID+"="+t.PF)
		if t.Healthy {
			healthy++
		} else {
			sick = append(sick, t.ID+": "+t.Reason)
		}
	}
	a.log.Debug("tokens advertised", "resource", resource, "tokens", len(ts), "healthy", healthy, "unhealthy", sick, "list", ids,
		"inUse", slices.Sorted(maps.Keys(a.late.inUse())))
}

// publishBindingView publishes the node view for binders.
func (a *Agent) publishBindingView(ctx context.Context) {
	if a.late == nil {
		return
	}
	if err := a.late.publish(ctx); err != nil {
		a.log.Error("publishing the binding view failed: binders (PreStartContainer, railyard-cni) use the previous one, or bind nothing without one", "dir", a.late.store.Dir(), "err", err)
	}
}

// startLateBinding heals the binding files (a process may have died
// between a commit and its files, or a reboot emptied /var/run/cdi) and
// collects ended pods once, at start.
func (a *Agent) startLateBinding(ctx context.Context) {
	if a.late == nil {
		return
	}
	a.late.refresh = a.refreshTokens
	a.late.collect(ctx)
	a.refreshTokens()
	go a.late.runEarly(ctx)
}

// collectBindings runs the binding GC (every resync).
func (a *Agent) collectBindings(ctx context.Context) {
	if a.late != nil {
		a.late.collect(ctx)
	}
}
