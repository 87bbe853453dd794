package v1alpha1

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Defaults of the agent configuration.
const (
	DefaultSysfsRoot          = "/sys"
	DefaultDevRoot            = "/dev"
	DefaultPluginDir          = "/var/lib/kubelet/device-plugins"
	DefaultPodResourcesSocket = "/var/lib/kubelet/pod-resources/kubelet.sock"
	DefaultDevInfoDir         = "/var/run/k8s.cni.cncf.io/devinfo/dp"
	DefaultMetricsAddr        = "127.0.0.1:9410"
	DefaultResyncInterval     = 10 * time.Second
	DefaultPortPollInterval   = 2 * time.Second
	// ErrorCounters' defaults and bounds.
	DefaultErrorCounterWindow = 30 * time.Second
	DefaultLinkErrors         = 10
	DefaultDegradedHold       = 5 * time.Minute
	MinErrorCounterWindow     = time.Second
	MaxErrorCounterWindow     = time.Hour
	MaxDegradedHold           = 24 * time.Hour
	// Bounds of the intervals: a resync below a second spins a core on
	// rediscoveries; above a day the agent would hardly resync at all. A
	// port poll of 0 disables it.
	MinResyncInterval   = time.Second
	MaxResyncInterval   = 24 * time.Hour
	MinPortPollInterval = 100 * time.Millisecond
	MaxPortPollInterval = time.Hour
	DefaultDeviceKind   = KindVF
	DefaultPolicy       = PolicyGPUAware
	DefaultNCCLIBHCA    = NCCLIBHCAEnv
	DefaultStateDir     = "/var/lib/railyard"
	// DefaultSharedLimit and MaxSharedLimit bound the shares per NIC of a
	// shared pool. k8s-rdma-shared-dev-plugin has no default for its
	// rdmaHcaMax (it is required); its README and shipped ConfigMap use
	// 1000, which is also far above kubelet's pod limit, so the share
	// count never is what limits a node. 1000 shares x 16 NICs keep
	// ListAndWatch well under gRPC's 4 MiB message limit.
	DefaultSharedLimit = 1000
	MaxSharedLimit     = 1000
)

// DefaultGPUResourceNames are the GPU resources looked up in PodResources.
func DefaultGPUResourceNames() []string { return []string{"nvidia.com/gpu", "amd.com/gpu"} }

// Default fills in every field left empty. It never overrides a set value.
func Default(c *AgentConfig) {
	if c.APIVersion == "" {
		c.APIVersion = APIVersion
	}
	if c.Kind == "" {
		c.Kind = Kind
	}
	setString(&c.SysfsRoot, DefaultSysfsRoot)
	setString(&c.DevRoot, DefaultDevRoot)
	setString(&c.PluginDir, DefaultPluginDir)
	setString(&c.PodResourcesSocket, DefaultPodResourcesSocket)
	setString(&c.DevInfoDir, DefaultDevInfoDir)
	setString(&c.MetricsAddr, DefaultMetricsAddr)
	if c.ResyncInterval == nil {
		c.ResyncInterval = &metav1.Duration{Duration: DefaultResyncInterval}
	}
	if c.PortPollInterval == nil {
		c.PortPollInterval = &metav1.Duration{Duration: DefaultPortPollInterval}
	}
	if c.ErrorCounters == nil {
		c.ErrorCounters = &ErrorCounters{}
	}
	if ec := c.ErrorCounters; ec.Window == nil {
		ec.Window = &metav1.Duration{Duration: DefaultErrorCounterWindow}
	}
	if ec := c.ErrorCounters; ec.LinkErrors == nil {
		n := int64(DefaultLinkErrors)
		ec.LinkErrors = &n
	}
	if ec := c.ErrorCounters; ec.Hold == nil {
		ec.Hold = &metav1.Duration{Duration: DefaultDegradedHold}
	}
	setString(&c.NCCLIBHCA, DefaultNCCLIBHCA)
	setString(&c.StateDir, DefaultStateDir)
	if len(c.GPUResourceNames) == 0 {
		c.GPUResourceNames = DefaultGPUResourceNames()
	}
	for i := range c.Pools {
		p := &c.Pools[i]
		setString(&p.DeviceKind, DefaultDeviceKind)
		setString(&p.Policy, DefaultPolicy)
		setString(&p.Binding, BindingAllocate)
		setString(&p.Delivery, DeliveryDevicePlugin)
		if p.DeviceKind == KindShared && p.SharedLimit == nil {
			n := DefaultSharedLimit
			p.SharedLimit = &n
		}
		if p.DeviceNodes.RDMACM == nil {
			yes := true
			p.DeviceNodes.RDMACM = &yes
		}
	}
}

func setString(p *string, def string) {
	if *p == "" {
		*p = def
	}
}
