package agent

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/go-logr/logr"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"

	"github.com/railyard-io/railyard/api/config/v1alpha1"
	"github.com/railyard-io/railyard/internal/dra"
	"github.com/railyard-io/railyard/internal/draplugin"
	"github.com/railyard-io/railyard/internal/draview"
	"github.com/railyard-io/railyard/internal/topology"
)

// Where the DRA kubelet plugin's sockets go by default.
const (
	DefaultDRAPluginDir       = kubeletplugin.KubeletPluginsDir + "/" + dra.DriverName
	DefaultPluginsRegistryDir = kubeletplugin.KubeletRegistryDir
)

// warningDRAExclusive counts rediscoveries that found a device both a
// dra pool and a device plugin pool select.
const warningDRAExclusive = "dra_and_device_plugin_overlap"

// draState is the agent's DRA kubelet plugin: the pools with delivery
// "dra", never served by the device plugin too.
type draState struct {
	driver *draplugin.Driver
	pools  []v1alpha1.Pool
	// pluginDir and registryDir are set by run before Serve; the API
	// server client is the agent's (Agent.kube).
	pluginDir, registryDir string
}

// newDRA builds the driver of the configuration's dra pools (nil when
// there is none).
func newDRA(cfg *v1alpha1.AgentConfig, log logr.Logger, m *Metrics) (*draState, error) {
	var pools []v1alpha1.Pool
	for _, p := range cfg.Pools {
		if p.Delivery == v1alpha1.DeliveryDRA {
			pools = append(pools, p)
		}
	}
	if len(pools) == 0 {
		// A DRA view of an earlier configuration would keep railyard-cni
		// treating its pools as DRA pools.
		if err := os.Remove(draview.Path(BindingDir(cfg.StateDir))); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("removing the DRA view of an earlier configuration: %w", err)
		}
		return nil, nil
	}
	if cfg.NodeName == "" {
		return nil, errors.New("a pool with delivery dra needs this node's name: set nodeName, --node-name or RAILYARD_NODE_NAME (the DRA pools are <node>/<pool>)")
	}
	d, err := draplugin.New(draplugin.Config{
		NodeName: cfg.NodeName, Pools: pools, DevRoot: cfg.DevRoot, CDISpecDir: cfg.CDISpecDir, StateDir: cfg.StateDir,
		ViewDir: BindingDir(cfg.StateDir), NCCL: ncclOptions(cfg),
		OnError: func(_ context.Context, err error, msg string, fatal bool) {
			log.Error(err, "DRA kubelet plugin: "+msg, "fatal", fatal)
		},
		Observe: m.ObserveDRA,
	})
	if err != nil {
		return nil, err
	}
	return &draState{driver: d, pools: pools, pluginDir: DefaultDRAPluginDir, registryDir: DefaultPluginsRegistryDir}, nil
}

// DRA returns the DRA driver (nil when no pool has delivery dra).
func (a *Agent) DRA() *draplugin.Driver {
	if a.dra == nil {
		return nil
	}
	return a.dra.driver
}

// updateDRA checks that no device is served both ways, then publishes
// the dra pools of a new topology. Called with a.mu held.
func (a *Agent) updateDRA(ctx context.Context, topo *topology.Topology, why string) error {
	if err := dra.CheckExclusive(topo, a.cfg.Pools); err != nil {
		a.metrics.Warning(warningDRAExclusive)
		return err
	}
	before := a.dra.driver.Pools()
	pools, err := a.dra.driver.Update(ctx, topo)
	if err != nil {
		return err
	}
	for i, p := range pools {
		a.metrics.SetPoolDevices(p.Resource, len(p.Devices), len(p.Unpublished))
		if i < len(before) && len(before[i].Devices) == len(p.Devices) && len(before[i].Unpublished) == len(p.Unpublished) {
			continue
		}
		a.log.Info("DRA pool changed", "pool", p.Name, "why", why, "published", len(p.Devices), "held", len(p.Held))
		for _, u := range p.Unpublished {
			a.log.Info("DRA device not published", "pool", p.Name, "device", u.PCI, "reason", u.Reason)
		}
	}
	return nil
}

// serveDRA starts the kubelet plugin; it stops when ctx is done.
func (a *Agent) serveDRA(ctx context.Context) (*kubeletplugin.Helper, error) {
	if a.kube == nil {
		return nil, errors.New("DRA kubelet plugin: no Kubernetes client")
	}
	for _, dir := range []string{a.dra.pluginDir, a.dra.registryDir} {
		if err := os.MkdirAll(dir, 0o750); err != nil {
			return nil, fmt.Errorf("DRA kubelet plugin: %w", err)
		}
	}
	return draplugin.Serve(ctx, a.dra.driver, draplugin.ServeOptions{
		Client: a.kube, PluginDataDir: a.dra.pluginDir, RegistrarDir: a.dra.registryDir,
		Logger: logr.FromSlogHandler(a.log.Handler()),
	})
}

// draPools counts the pools the DRA kubelet plugin serves.
func (a *Agent) draPools() int {
	if a.dra == nil {
		return 0
	}
	return len(a.dra.pools)
}
