package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/client-go/kubernetes"

	"github.com/railyard-io/railyard/api/config/v1alpha1"
	"github.com/railyard-io/railyard/internal/discovery"
	"github.com/railyard-io/railyard/internal/nccltopo"
)

// Run is railyard-agent's main: it parses args (without the program name)
// and the RAILYARD_* environment, and serves until ctx is done.
func Run(ctx context.Context, args []string, stderr io.Writer) error {
	return run(ctx, args, os.LookupEnv, stderr, nil, nil)
}

// discoverFor is the discovery the configuration asks for: sysfs, and the
// NCCL topology file's classes when one is configured (read once, at start).
func discoverFor(cfg *v1alpha1.AgentConfig) (DiscoverFunc, error) {
	if cfg.NCCLTopologyFile == "" {
		return discovery.Discover, nil
	}
	sys, err := nccltopo.ParseFile(cfg.NCCLTopologyFile)
	if err != nil {
		return nil, fmt.Errorf("ncclTopologyFile: %w", err)
	}
	return discovery.Options{NCCLTopology: sys, NCCLTopologyName: filepath.Base(cfg.NCCLTopologyFile)}.Discover, nil
}

// run is Run with its environment and discovery injected (nil: what the
// configuration asks for); ready, when not nil, receives the agent once it
// serves.
func run(ctx context.Context, args []string, env LookupEnv, stderr io.Writer, discover DiscoverFunc, ready func(*Agent, net.Addr)) error {
	return runWith(ctx, args, env, stderr, discover, ready, nil)
}

// runWith is run with the API server client injected (nil: from
// --kubeconfig or in-cluster, made only when a pool has delivery dra).
func runWith(ctx context.Context, args []string, env LookupEnv, stderr io.Writer, discover DiscoverFunc, ready func(*Agent, net.Addr), kube kubernetes.Interface) error {
	fs := pflag.NewFlagSet("railyard-agent", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	opt, err := ParseOptions(args, env, fs)
	if err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return nil
		}
		return err
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: opt.LogLevel}))
	if opt.Config.NodeName != "" {
		log = log.With("node", opt.Config.NodeName)
	}
	if discover == nil {
		if discover, err = discoverFor(opt.Config); err != nil {
			return err
		}
	}
	a, err := New(opt.Config, log, discover)
	if err != nil {
		return err
	}
	// The API server: a dra pool needs it; otherwise it is used where the
	// agent has one (a kubeconfig, or a pod's service account) for the
	// counters' job_name.
	_, inPod := env("KUBERNETES_SERVICE_HOST")
	if kube == nil && (a.dra != nil || opt.Kubeconfig != "" || inPod) {
		if kube, err = kubeClient(opt.Kubeconfig); err != nil {
			if a.dra != nil {
				return fmt.Errorf("a pool with delivery dra needs the API server (--kubeconfig, or the pod's service account): %w", err)
			}
			// Without a mounted token (the chart's default) this is
			// expected; a kubeconfig given and unusable is not.
			level := slog.LevelInfo
			if opt.Kubeconfig != "" {
				level = slog.LevelWarn
			}
			log.Log(ctx, level, "no API server: the RDMA counters' job_name stays empty (chart: metrics.jobNames)", "err", err)
			kube = nil
		}
	}
	a.kube = kube
	a.gids = &gidEvents{dirs: cniStateDirs(opt.CNIStateDir), log: a.log, kube: kube, node: opt.Config.NodeName, now: time.Now}
	if a.dra != nil {
		a.dra.pluginDir, a.dra.registryDir = opt.DRAPluginDir, opt.PluginsRegistryDir
	}
	return a.Serve(ctx, ready)
}

// Serve runs the agent until ctx is done: first discovery, plugins,
// watches, resync and the metrics endpoint.
func (a *Agent) Serve(ctx context.Context, ready func(*Agent, net.Addr)) error {
	if err := os.MkdirAll(a.cfg.PluginDir, 0o755); err != nil {
		return fmt.Errorf("plugin directory: %w", err)
	}
	if err := a.Rediscover(ctx, "start"); err != nil {
		return fmt.Errorf("first discovery: %w", err)
	}
	w, err := newWatcher(a.cfg.PluginDir)
	if err != nil {
		return fmt.Errorf("watching %s: %w", a.cfg.PluginDir, err)
	}
	defer w.fs.Close()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	var addr net.Addr
	metricsAt := "off (metricsAddr 0)"
	if a.cfg.MetricsAddr != "0" {
		lis, err := net.Listen("tcp", a.cfg.MetricsAddr)
		if err != nil {
			return fmt.Errorf("metrics endpoint: %w", err)
		}
		addr = lis.Addr()
		metricsAt = "http://" + addr.String() + "/metrics"
		srv := &http.Server{Handler: a.handler(), ReadHeaderTimeout: 5 * time.Second}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := srv.Serve(lis); err != nil && !errors.Is(err, http.ErrServerClosed) {
				a.log.Error("metrics endpoint stopped", "err", err)
			}
		}()
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-ctx.Done()
			shut, c := context.WithTimeout(context.Background(), 2*time.Second)
			defer c()
			_ = srv.Shutdown(shut)
		}()
	}
	if a.kube != nil && a.cfg.NodeName != "" {
		defer a.watchPodJobs(ctx, a.kube)()
	}
	for _, pp := range a.pools {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = pp.plugin.Run(ctx)
		}()
	}
	if a.dra != nil {
		h, err := a.serveDRA(ctx)
		if err != nil {
			cancel()
			wg.Wait()
			return err
		}
		defer h.Stop()
		defer a.watchLeaves(ctx)()
	}
	if a.gids != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a.gids.watch(ctx, a.cfg.ResyncInterval.Duration)
		}()
	}
	a.primeFinder(ctx)
	a.startLateBinding(ctx)
	a.log.Info("railyard-agent serving", "pools", len(a.pools), "dra_pools", a.draPools(), "plugin_dir", a.cfg.PluginDir, "metrics", metricsAt)
	if ready != nil {
		ready(a, addr)
	}
	a.loop(ctx, w)
	cancel()
	wg.Wait()
	return nil
}
