package agent

import (
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/railyard-io/railyard/api/config/v1alpha1"
)

// LookupEnv reads an environment variable (os.LookupEnv in production).
type LookupEnv func(key string) (string, bool)

// EnvPrefix prefixes every environment variable the agent reads.
const EnvPrefix = "RAILYARD_"

// setting is one overridable setting: its flag, environment variable and
// where it lands in the configuration.
type setting struct {
	flag, usage string
	apply       func(c *v1alpha1.AgentConfig, v string) error
}

func (s setting) env() string {
	return EnvPrefix + strings.ToUpper(strings.ReplaceAll(s.flag, "-", "_"))
}

func str(dst func(*v1alpha1.AgentConfig) *string) func(*v1alpha1.AgentConfig, string) error {
	return func(c *v1alpha1.AgentConfig, v string) error { *dst(c) = v; return nil }
}

var settings = [...]setting{
	{"sysfs", "sysfs root (default /sys)", str(func(c *v1alpha1.AgentConfig) *string { return &c.SysfsRoot })},
	{"dev-root", "device node root whose infiniband/ holds uverbsN and rdma_cm (default /dev)", str(func(c *v1alpha1.AgentConfig) *string { return &c.DevRoot })},
	{"plugin-dir", "kubelet device plugin directory holding kubelet.sock (default /var/lib/kubelet/device-plugins)", str(func(c *v1alpha1.AgentConfig) *string { return &c.PluginDir })},
	{"pod-resources-socket", "kubelet PodResources socket (default /var/lib/kubelet/pod-resources/kubelet.sock)", str(func(c *v1alpha1.AgentConfig) *string { return &c.PodResourcesSocket })},
	{"devinfo-dir", "directory for Multus device-info files (default /var/run/k8s.cni.cncf.io/devinfo/dp)", str(func(c *v1alpha1.AgentConfig) *string { return &c.DevInfoDir })},
	{"metrics-addr", "listen address of /healthz and /metrics, \"0\" disables (default 127.0.0.1:9410)", str(func(c *v1alpha1.AgentConfig) *string { return &c.MetricsAddr })},
	{"gpu-map", "file mapping GPU UUIDs to PCI addresses (JSON object or nvidia-smi csv)", str(func(c *v1alpha1.AgentConfig) *string { return &c.GPUMap })},
	{"nccl-topo-file", "NCCL topology file (NCCL_TOPO_FILE format) classifying GPU x NIC pairs on VMs that hide the PCIe tree", str(func(c *v1alpha1.AgentConfig) *string { return &c.NCCLTopologyFile })},
	{"node-name", "this node's name, for logs", str(func(c *v1alpha1.AgentConfig) *string { return &c.NodeName })},
	{"nccl-ib-hca", "how containers get NCCL_IB_HCA: env (each pool's Allocate) or merged (one NCCL config per container for all its pools) (default env)", str(func(c *v1alpha1.AgentConfig) *string { return &c.NCCLIBHCA })},
	{"nccl-cross-nic", "every container's NCCL_CROSS_NIC: 0 on isolated rails (a leaf per rail, no spine between them), 1 or 2 where rails are joined (default unset: NCCL decides)", func(c *v1alpha1.AgentConfig, v string) error {
		n, err := strconv.Atoi(v)
		if err != nil {
			return fmt.Errorf("want 0, 1 or 2: %w", err)
		}
		c.NCCLCrossNIC = &n
		return nil
	}},
	{"state-dir", "directory of the merged NCCL config files containers mount (default /var/lib/railyard)", str(func(c *v1alpha1.AgentConfig) *string { return &c.StateDir })},
	{"cdi-spec-dir", "with --nccl-ib-hca merged, also write a CDI spec per container here (e.g. /var/run/cdi) that sets NCCL_IB_HCA", str(func(c *v1alpha1.AgentConfig) *string { return &c.CDISpecDir })},
	{"resync-interval", "period of the full rediscovery (default 10s)", func(c *v1alpha1.AgentConfig, v string) error {
		d, err := time.ParseDuration(v)
		if err != nil {
			return err
		}
		c.ResyncInterval = &metav1.Duration{Duration: d}
		return nil
	}},
	{"port-poll-interval", "how often RDMA port states are read; real sysfs raises no event when a port goes down (default 2s, 0 disables)", func(c *v1alpha1.AgentConfig, v string) error {
		d, err := time.ParseDuration(v)
		if err != nil {
			return err
		}
		c.PortPollInterval = &metav1.Duration{Duration: d}
		return nil
	}},
}

// Options are the parsed command line and environment.
type Options struct {
	ConfigFile string
	LogLevel   slog.Level
	Config     *v1alpha1.AgentConfig
	// Kubeconfig, DRAPluginDir and PluginsRegistryDir are used only when
	// a pool has delivery dra.
	Kubeconfig         string
	DRAPluginDir       string
	PluginsRegistryDir string
	// CNIStateDir is railyard-cni's state directories (comma-separated;
	// "": none), whose records the agent reads for the pods' RoCE GID
	// indexes (gidevents.go).
	CNIStateDir string
}

// ErrHelp is returned when --help was asked for (usage is printed).
var ErrHelp = pflag.ErrHelp

// ParseOptions builds the configuration: defaults, then the config file
// (--config or RAILYARD_CONFIG), then RAILYARD_* variables, then flags.
// Every validation error is reported at once.
func ParseOptions(args []string, env LookupEnv, fs *pflag.FlagSet) (*Options, error) {
	var opt Options
	var logLevel string
	fs.StringVar(&opt.ConfigFile, "config", "", "agent configuration file (YAML or JSON); env RAILYARD_CONFIG")
	fs.StringVar(&logLevel, "log-level", "info", "debug, info, warn or error; env RAILYARD_LOG_LEVEL")
	dirs := []struct {
		dst             *string
		flag, def, help string
	}{
		{&opt.Kubeconfig, "kubeconfig", "", "kubeconfig file for the API server, used only by pools with delivery dra (default: the pod's service account)"},
		{&opt.DRAPluginDir, "dra-plugin-dir", DefaultDRAPluginDir, "directory of the DRA kubelet plugin's dra.sock"},
		{&opt.PluginsRegistryDir, "plugins-registry-dir", DefaultPluginsRegistryDir, "kubelet's plugin registration directory (DRA)"},
		{&opt.CNIStateDir, "cni-state-dir", DefaultCNIStateDir, "railyard-cni's state directories, comma-separated, whose records say when a pod's HCAs have their RoCE GIDs at different indexes (\"\": none)"},
	}
	for _, d := range dirs {
		fs.StringVar(d.dst, d.flag, d.def, d.help+"; env "+EnvPrefix+strings.ToUpper(strings.ReplaceAll(d.flag, "-", "_")))
	}
	values := make([]string, len(settings))
	for i, s := range settings {
		fs.StringVar(&values[i], s.flag, "", s.usage+"; env "+s.env())
	}
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments: %s", strings.Join(fs.Args(), " "))
	}
	if !fs.Changed("config") {
		opt.ConfigFile, _ = env("RAILYARD_CONFIG")
	}
	if !fs.Changed("log-level") {
		if v, ok := env("RAILYARD_LOG_LEVEL"); ok {
			logLevel = v
		}
	}
	for _, d := range dirs {
		if v, ok := env(EnvPrefix + strings.ToUpper(strings.ReplaceAll(d.flag, "-", "_"))); ok && !fs.Changed(d.flag) {
			*d.dst = v
		}
	}
	if err := opt.LogLevel.UnmarshalText([]byte(logLevel)); err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	if opt.ConfigFile == "" {
		return nil, errors.New("no configuration: give --config FILE (or RAILYARD_CONFIG); it defines the pools")
	}
	data, err := v1alpha1.ReadFile(opt.ConfigFile)
	if err != nil {
		return nil, err
	}
	cfg, err := v1alpha1.Decode(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", opt.ConfigFile, err)
	}
	for i, s := range settings {
		v, set := env(s.env())
		if fs.Changed(s.flag) {
			v, set = values[i], true
		}
		if !set {
			continue
		}
		if err := s.apply(cfg, v); err != nil {
			return nil, fmt.Errorf("--%s / %s: %w", s.flag, s.env(), err)
		}
	}
	v1alpha1.Default(cfg)
	if errs := v1alpha1.Validate(cfg); len(errs) > 0 {
		return nil, fmt.Errorf("%s (after flags and environment): %w:\n%s", opt.ConfigFile, v1alpha1.ErrInvalid, v1alpha1.FormatErrors(errs))
	}
	opt.Config = cfg
	return &opt, nil
}
