package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// APIVersion and Kind identify this configuration format.
const (
	APIVersion = "railyard.io/v1alpha1"
	Kind       = "AgentConfig"
)

// Device kinds a pool hands out.
const (
	// KindVF hands out SR-IOV virtual functions.
	KindVF = "vf"
	// KindPF hands out whole physical functions.
	KindPF = "pf"
	// KindShared hands out shares of a physical function: up to
	// Pool.SharedLimit pods use one NIC at once, each with its verbs
	// devices (and a macvlan netdev on it from a CNI).
	KindShared = "shared"
)

// Ways to give a container NCCL_IB_HCA (AgentConfig.NCCLIBHCA).
const (
	// NCCLIBHCAEnv sets NCCL_IB_HCA in each pool's Allocate response. Right
	// for a container taking devices of one pool; with several pools
	// kubelet keeps one pool's value.
	NCCLIBHCAEnv = "env"
	// NCCLIBHCAMerged gives every container one NCCL configuration file
	// naming the RDMA devices of all its pools (NCCL_CONF_FILE), and, with
	// CDISpecDir, NCCL_IB_HCA through a CDI device, whatever order kubelet
	// allocated the pools in.
	NCCLIBHCAMerged = "merged"
)

// When a pool's devices are chosen (Pool.Binding).
const (
	// BindingAllocate: Allocate hands out the device kubelet chose (device
	// IDs are PCI addresses).
	BindingAllocate = "allocate"
	// BindingSandbox: kubelet gets fungible tokens; the device behind each
	// is chosen when the pod's sandbox is created, knowing the pod's GPUs,
	// and reaches the container through CDI (needs cdiSpecDir).
	BindingSandbox = "sandbox"
)

// How a pool's devices reach pods (Pool.Delivery).
const (
	// DeliveryDevicePlugin serves the pool to kubelet as an extended
	// resource through the device plugin API.
	DeliveryDevicePlugin = "devicePlugin"
	// DeliveryDRA publishes the pool's devices in ResourceSlices for
	// Dynamic Resource Allocation (driver rdma.railyard.io, docs/dra.md).
	DeliveryDRA = "dra"
)

// Allocation policy names (see internal/alloc).
const (
	PolicySpread   = "spread"
	PolicyGPUAware = "gpu-aware"
	PolicyPacked   = "packed"
)

// Link layers as sysfs spells them.
const (
	LinkLayerInfiniBand = "InfiniBand"
	LinkLayerEthernet   = "Ethernet"
)

// AgentConfig is the whole configuration of railyard-agent.
type AgentConfig struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`

	// NodeName is this node's name (for logs and metrics labels).
	NodeName string `json:"nodeName,omitempty"`
	// SysfsRoot is where sysfs is mounted ("/sys").
	SysfsRoot string `json:"sysfsRoot,omitempty"`
	// DevRoot is where device nodes live ("/dev"); Allocate hands out
	// <DevRoot>/infiniband/uverbsN as the host path.
	DevRoot string `json:"devRoot,omitempty"`
	// PluginDir is kubelet's device plugin directory, holding kubelet.sock.
	PluginDir string `json:"pluginDir,omitempty"`
	// PodResourcesSocket is kubelet's PodResources API socket.
	PodResourcesSocket string `json:"podResourcesSocket,omitempty"`
	// DevInfoDir is where device-info-spec files for Multus are written.
	DevInfoDir string `json:"devInfoDir,omitempty"`
	// MetricsAddr is the listen address of /healthz and /metrics; "" or
	// "0" disables the endpoint.
	MetricsAddr string `json:"metricsAddr,omitempty"`
	// ResyncInterval is the period of the full rediscovery that backs up
	// the file watches.
	ResyncInterval *metav1.Duration `json:"resyncInterval,omitempty"`
	// PortPollInterval is how often the RDMA ports' state files are read.
	// Real sysfs raises no file event when a port goes down, so this poll
	// is what notices it; a change triggers a rediscovery. "0s" disables.
	PortPollInterval *metav1.Duration `json:"portPollInterval,omitempty"`
	// ErrorCounters marks a NIC degraded from its PF ports' error
	// counters, read at every rediscovery (docs/agent.md, "Health from
	// counters").
	ErrorCounters *ErrorCounters `json:"errorCounters,omitempty"`
	// Firmware is which NIC firmware the agent refuses: a refused NIC's
	// devices are unhealthy (the DRA driver taints them NoSchedule).
	// Unset refuses nothing. `railyard doctor --firmware-minimum
	// --refuse-known-issue` judges by the same rules.
	Firmware *Firmware `json:"firmware,omitempty"`
	// GPUMap is a file mapping GPU UUIDs to PCI addresses ("" = none).
	GPUMap string `json:"gpuMap,omitempty"`
	// NCCLTopologyFile is an NCCL topology file (the one NCCL_TOPO_FILE
	// names; clouds ship one per VM size) whose PCI nesting classifies
	// GPU x NIC pairs where sysfs hides the PCIe tree ("" = sysfs only).
	NCCLTopologyFile string `json:"ncclTopologyFile,omitempty"`
	// GPUResourceNames are the extended resources naming GPUs, looked up
	// in PodResources for the gpu-aware policy.
	GPUResourceNames []string `json:"gpuResourceNames,omitempty"`

	// NCCLIBHCA is how containers get NCCL_IB_HCA: "env" (default) or
	// "merged" (see docs/agent.md, "Multi-rail pods").
	NCCLIBHCA string `json:"ncclIBHCA,omitempty"`
	// NCCLCrossNIC, when set, is every container's NCCL_CROSS_NIC: 0 on
	// isolated rails (a leaf per rail and no spine between them: NCCL must
	// keep each ring and tree on one rail across nodes), 1 or 2 (NCCL's
	// default) where rails are joined. Unset: NCCL decides. `railyard
	// fabric` recommends a value from the cabling it sees (docs/fabric.md).
	NCCLCrossNIC *int `json:"ncclCrossNIC,omitempty"`
	// NCCLProfile names a fabric profile whose NCCL settings every
	// container gets ("adaptive-routing", "ecmp"; "" = none; see
	// docs/agent.md, "NCCL settings").
	NCCLProfile string `json:"ncclProfile,omitempty"`
	// NCCLSocketIfname, when set, is every container's NCCL_SOCKET_IFNAME
	// ("" sets none); unset, containers that get their devices from a
	// device plugin's Allocate get "^docker,lo,virbr,net", which keeps
	// NCCL's bootstrap off the rails, unless the pod sets its own.
	NCCLSocketIfname *string `json:"ncclSocketIfname,omitempty"`
	// NCCLIBAddrFamily, when set ("AF_INET", "AF_INET6"), is every
	// container's NCCL_IB_ADDR_FAMILY: the family of the RoCE v2 GID NCCL
	// picks on each HCA. Unset: AF_INET, where the pod can override it.
	NCCLIBAddrFamily string `json:"ncclIBAddrFamily,omitempty"`
	// StateDir holds the merged NCCL configuration files that containers
	// mount ("merged" only). It must survive agent and node restarts:
	// kubelet mounts the same file again when a container restarts.
	StateDir string `json:"stateDir,omitempty"`
	// CDISpecDir, when set ("/var/run/cdi"), makes "merged" also write a
	// CDI spec per container that sets NCCL_IB_HCA (containerd >= 1.7,
	// CRI-O).
	CDISpecDir string `json:"cdiSpecDir,omitempty"`

	// Pools are the resources served to kubelet, one device plugin each.
	Pools []Pool `json:"pools"`
}

// ErrorCounters is when a NIC's error counters mark it degraded: a flap
// (link downed, link error recovery) at once, LinkErrors link errors
// (symbol, local link integrity, excessive buffer overrun) within Window;
// it stays degraded for Hold after its last such rise.
type ErrorCounters struct {
	// Window is the span link errors add up over (default 30s); "0s"
	// turns the counters' health off.
	Window *metav1.Duration `json:"window,omitempty"`
	// LinkErrors is how many link errors in one window degrade (default 10).
	LinkErrors *int64 `json:"linkErrors,omitempty"`
	// Hold is how long a NIC stays degraded after its last counted rise
	// (default 5m).
	Hold *metav1.Duration `json:"hold,omitempty"`
}

// Firmware is a firmware policy (internal/firmware.Policy). A firmware
// version that cannot be read or parsed is never refused.
type Firmware struct {
	// Minimum is the oldest release accepted per NIC model, the model as
	// lspci -n prints it: {"15b3:1021": "28.39.1002"}.
	Minimum map[string]string `json:"minimum,omitempty"`
	// RefuseKnownIssues lists NVIDIA references of known firmware issues
	// (docs/doctor.md#known-firmware-issues) whose releases are refused.
	RefuseKnownIssues []string `json:"refuseKnownIssues,omitempty"`
}

// Pool is one extended resource (one device plugin) and how its devices
// are chosen from the node.
type Pool struct {
	// Name is the resource name, "<domain>/<name>" (railyard.io/rdma_vf_a).
	Name string `json:"name"`
	// DeviceKind is "vf" (SR-IOV virtual functions), "pf" (whole NICs) or
	// "shared" (shares of whole NICs).
	DeviceKind string `json:"deviceKind,omitempty"`
	// SharedLimit is how many pods may share one NIC of a "shared" pool:
	// the pool advertises this many devices per NIC (default 1000, like
	// the rdmaHcaMax of k8s-rdma-shared-dev-plugin's examples; 1-1000).
	SharedLimit *int `json:"sharedLimit,omitempty"`
	// Policy is the allocation policy: spread, gpu-aware or packed.
	Policy string `json:"policy,omitempty"`
	// Selectors choose devices; all given selectors must match (AND), any
	// value inside one selector may match (OR).
	Selectors Selectors `json:"selectors"`
	// DeviceNodes says which extra RDMA device nodes a container gets.
	DeviceNodes DeviceNodes `json:"deviceNodes,omitempty"`
	// CDIKind, when set ("railyard.io/rdma"), makes Allocate also return
	// CDI device names "<CDIKind>=<device id>".
	CDIKind string `json:"cdiKind,omitempty"`
	// Binding is "allocate" (default) or "sandbox" (late binding: see
	// docs/agent.md).
	Binding string `json:"binding,omitempty"`
	// Delivery is how the pool's devices reach pods: "devicePlugin"
	// (default) or "dra". A pool is served one way only, so the device
	// plugin and DRA never hand out the same device. A "dra" pool is
	// published by the agent's DRA kubelet plugin (docs/dra.md) and needs
	// cdiSpecDir.
	Delivery string `json:"delivery,omitempty"`
}

// Selectors choose the devices of a pool. Empty selectors match anything.
type Selectors struct {
	// Vendors are PCI vendor IDs in hex ("15b3").
	Vendors []string `json:"vendors,omitempty"`
	// Devices are PCI device IDs in hex. In a vf pool a VF matches by its
	// own ID ("101e") or its PF's ("1021").
	Devices []string `json:"devices,omitempty"`
	// Drivers are kernel drivers of the device handed out ("mlx5_core").
	Drivers []string `json:"drivers,omitempty"`
	// PFNames are PF netdev names, optionally with a VF index range:
	// "ibp24s0", "ibp24s0#0-7", "ens1f0#2,4-5".
	PFNames []string `json:"pfNames,omitempty"`
	// PCIAddresses are PCI addresses of devices (or of their PF).
	PCIAddresses []string `json:"pciAddresses,omitempty"`
	// LinkLayers are "InfiniBand" and/or "Ethernet".
	LinkLayers []string `json:"linkLayers,omitempty"`
	// RDMACapable, when true, keeps only devices with an RDMA device and a
	// uverbs char device; when false, only those without.
	RDMACapable *bool `json:"rdmaCapable,omitempty"`
	// NUMANodes keep only devices on these NUMA nodes.
	NUMANodes []int `json:"numaNodes,omitempty"`
}

// DeviceNodes are the optional per-container RDMA device nodes. The
// device's own uverbs node is always given.
type DeviceNodes struct {
	// RDMACM adds /dev/infiniband/rdma_cm (default true).
	RDMACM *bool `json:"rdmaCM,omitempty"`
	// UMAD adds the port's /dev/infiniband/umadN (default false).
	UMAD bool `json:"umad,omitempty"`
	// ISSM adds the port's /dev/infiniband/issmN (default false).
	ISSM bool `json:"issm,omitempty"`
}
