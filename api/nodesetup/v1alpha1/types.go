package v1alpha1

// APIVersion and Kind identify this configuration format.
const (
	APIVersion = "railyard.io/v1alpha1"
	Kind       = "NodePolicy"
)

// VF drivers a policy can ask for.
const (
	// DriverKernel binds VFs to their PF's kernel driver (mlx5_core): each
	// VF has a netdev and an RDMA device on the host.
	DriverKernel = "kernel"
	// DriverVFIO binds VFs to vfio-pci for pass-through (VMs, DPDK).
	DriverVFIO = "vfio-pci"
)

// Address modes of GUIDs (InfiniBand) and MACs (Ethernet).
const (
	// AddressDerived sets every VF's address to the value derived from the
	// PF's node GUID and the VF index (see docs/nodesetup.md).
	AddressDerived = "derived"
	// AddressKeep leaves VF addresses as they are.
	AddressKeep = "keep"
)

// Link layers as sysfs spells them.
const (
	LinkLayerInfiniBand = "InfiniBand"
	LinkLayerEthernet   = "Ethernet"
)

// MaxVFs bounds NumVFs (the PCIe SR-IOV capability's TotalVFs is 16 bits).
const MaxVFs = 65535

// NodePolicy is the SR-IOV setup of one node (or of every node it is
// given to: nothing in it names a node).
type NodePolicy struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	// SysfsRoot is where sysfs is mounted ("/sys").
	SysfsRoot string `json:"sysfsRoot,omitempty"`
	// CNIStateDir is railyard-cni's state directory, read to find VFs in
	// use by pods ("/var/lib/cni/railyard"); "" skips that source.
	CNIStateDir string `json:"cniStateDir,omitempty"`
	// PodResourcesSocket is kubelet's PodResources socket, asked which pod
	// holds a VF; "" skips that source.
	PodResourcesSocket string `json:"podResourcesSocket,omitempty"`
	// PFs are the physical functions this policy manages. A PF that no
	// entry names is never touched.
	PFs []PF `json:"pfs"`
}

// PF is the policy of one physical function, named by PCI address or by
// netdev name (exactly one of them).
type PF struct {
	// PCIAddress is the PF's PCI address ("0000:18:00.0").
	PCIAddress string `json:"pciAddress,omitempty"`
	// Netdev is the PF's network interface name ("ibp24s0").
	Netdev string `json:"netdev,omitempty"`
	// NumVFs is how many VFs the PF has (0 removes them all).
	NumVFs int `json:"numVFs"`
	// VFDriver is "kernel" (default) or "vfio-pci".
	VFDriver string `json:"vfDriver,omitempty"`
	// LinkLayer, when set, is the link layer the PF's ports must have
	// ("InfiniBand" or "Ethernet"). It is checked (railyard doctor), never
	// changed: the port type is a firmware setting (mlxconfig LINK_TYPE_P1).
	LinkLayer string `json:"linkLayer,omitempty"`
	// GUIDs is "derived" (default) or "keep": InfiniBand VFs only.
	GUIDs string `json:"guids,omitempty"`
	// MACs is "derived" (default) or "keep": Ethernet (RoCE) VFs only.
	MACs string `json:"macs,omitempty"`
	// PKey is the partition key ("0x8001") the VFs' GUIDs must be members
	// of: the subnet manager enforces partitions, so apply reports the
	// GUIDs to add to it (an OpenSM partitions.conf line) and doctor checks
	// each VF's pkey table; InfiniBand only.
	PKey string `json:"pkey,omitempty"`
	// QoS, when set, is the RoCE lossless configuration the PF must have
	// (doctor checks it, node apply sets it): Ethernet only.
	QoS *QoS `json:"qos,omitempty"`
}

// Trust modes: how the NIC classifies received traffic into priorities.
const (
	TrustDSCP = "dscp" // the IP header's DSCP (routed RoCE v2: NVIDIA's recommendation)
	TrustPCP  = "pcp"  // the VLAN tag's 802.1p priority
)

// QoS is a RoCE PF's lossless configuration, what `mlnx_qos -i <if>
// --trust dscp --pfc 0,0,0,1,0,0,0,0` and the ecn/ files set.
type QoS struct {
	// Trust is "dscp" or "pcp" (default dscp).
	Trust string `json:"trust,omitempty"`
	// PFC lists the priorities (0-7) with PFC enabled: RoCE's (3 in
	// NVIDIA's default configuration). Empty is PFC off: a lossy fabric.
	PFC []int `json:"pfc"`
	// ECN lists the priorities on which ECN's reaction and notification
	// points (DCQCN) are enabled; default: those of PFC.
	ECN []int `json:"ecn,omitempty"`
}

// Name is how messages name the PF: its PCI address, else its netdev.
func (p PF) Name() string {
	if p.PCIAddress != "" {
		return p.PCIAddress
	}
	return p.Netdev
}

// Ref is how the entry names its PF, for messages: "pciAddress
// 0000:18:00.0" or "netdev ibp24s0" ("" when it names none).
func (p PF) Ref() string {
	switch {
	case p.PCIAddress != "":
		return "pciAddress " + p.PCIAddress
	case p.Netdev != "":
		return "netdev " + p.Netdev
	}
	return ""
}
