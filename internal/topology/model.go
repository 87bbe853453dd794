package topology

import (
	"cmp"
	"fmt"
)

// Topology is the immutable model of one node. Build it with Discover (or
// the test helpers built on generated sysfs trees); never modify it.
type Topology struct {
	// Root is the sysfs directory the model was read from ("/sys" on a node).
	Root string `json:"-"`
	// HostBridges are the PCI root complexes ("pci0000:15"), sorted by
	// domain and bus (numerically, as the devices are).
	HostBridges []HostBridge `json:"host_bridges"`
	// GPUs are NVIDIA and AMD GPUs, sorted by PCI address.
	GPUs []GPU `json:"gpus"`
	// NICs are RDMA-capable physical functions (each port of a multi-port
	// card is its own function), sorted by PCI address.
	NICs []NIC `json:"nics"`
	// Links holds the distance class of every GPU x NIC pair, GPU-major in
	// the order of GPUs and NICs.
	Links []Link `json:"links"`
	// Rails assigns one NIC to every GPU: minimal total class rank, then the
	// fewest GPUs on NICs whose ports are not all ACTIVE. Every NIC has a
	// share of ceil(len(GPUs)/len(NICs)) GPUs; the share of a NIC that is
	// down may go to healthy NICs. Sorted like GPUs.
	Rails []Link `json:"rails"`
	// Warnings are problems found during discovery that did not stop it.
	Warnings []Warning `json:"warnings"`

	devices map[string]*PCIDevice // every PCI function by address
	gpuIdx  map[string]int
	nicIdx  map[string]int
	vfOwner map[string]int // VF address -> index of its PF in NICs
	// unreadable are functions listed on the bus but not read.
	unreadable map[string]bool
}

// HostBridge is a PCI root complex.
type HostBridge struct {
	Name string `json:"name"` // "pci0000:15"
	NUMA int    `json:"numa"` // -1 when unknown
}

// PCIDevice is one PCI function and its place in the tree.
type PCIDevice struct {
	Address    string `json:"pci"`    // "0000:18:00.0"
	Vendor     uint16 `json:"vendor"` // 0x15b3
	Device     uint16 `json:"device"`
	Class      uint32 `json:"class"` // 0x020700
	Driver     string `json:"driver,omitempty"`
	NUMA       int    `json:"numa"`        // -1 when unknown
	Bridge     bool   `json:"bridge"`      // a PCI-to-PCI bridge (root port or switch port)
	Parent     string `json:"parent"`      // address of the parent bridge, "" under a host bridge
	HostBridge string `json:"host_bridge"` // "pci0000:15"
}

// GPU is a GPU function.
type GPU struct {
	PCI    string `json:"pci"`
	Vendor uint16 `json:"vendor"`
	Device uint16 `json:"device"`
	NUMA   int    `json:"numa"`
}

// NIC is an RDMA-capable physical function.
type NIC struct {
	PCI    string `json:"pci"`
	Vendor uint16 `json:"vendor"`
	Device uint16 `json:"device"`
	Driver string `json:"driver,omitempty"`
	NUMA   int    `json:"numa"`
	// Netdev is the first network interface of the function ("" if none);
	// Netdevs lists all of them.
	Netdev  string   `json:"netdev"`
	Netdevs []string `json:"netdevs,omitempty"`
	// NetdevPCI is the PCI function that owns Netdev when it is not this
	// function: a VMware PVRDMA function (15ad:0820) has no netdev of its
	// own and is paired with the vmxnet3 netdev on function 0 of its slot.
	// "" when the netdev is the function's own.
	NetdevPCI string `json:"netdev_pci,omitempty"`
	// RDMA is the RDMA device name ("mlx5_0").
	RDMA string `json:"rdma"`
	// Uverbs is the verbs char device name ("uverbs0"), "" when absent.
	Uverbs string `json:"uverbs,omitempty"`
	// UMAD and ISSM are the management datagram char devices of the
	// first port ("umad0", "issm0"), "" when absent.
	UMAD string `json:"umad,omitempty"`
	ISSM string `json:"issm,omitempty"`
	// LinkLayer is "InfiniBand" or "Ethernet" (RoCE), from port 1.
	LinkLayer string `json:"link_layer"`
	// Firmware is the RDMA device's firmware version, its fw_ver
	// ("28.39.1002" on a ConnectX-7), as ibv_devinfo prints it; "" when
	// it could not be read or the NIC has no RDMA device.
	Firmware string `json:"firmware,omitempty"`
	Ports    []Port `json:"ports"`
	// TotalVFs is sriov_totalvfs (0 without SR-IOV); NumVFs is sriov_numvfs.
	TotalVFs int  `json:"total_vfs"`
	NumVFs   int  `json:"num_vfs"`
	VFs      []VF `json:"vf_list,omitempty"`
	// Degraded, when set, says why the NIC's error counters mark it
	// degraded (internal/porthealth: its link flapped, or took link
	// errors, while its ports stayed up). Discovery never sets it; the
	// agent does, and Health reads it.
	Degraded string `json:"degraded,omitempty"`
	// Refused, when set, says why the agent's firmware policy refuses the
	// NIC (internal/firmware: a release older than its model's minimum,
	// or one with a refused known issue). Discovery never sets it; the
	// agent does, and Health reads it.
	Refused string `json:"refused,omitempty"`
	// VFCount is len(VFs), the VFs that exist (the --json contract's "vfs").
	VFCount int `json:"vfs"`
}

// Port is one port of an RDMA device.
type Port struct {
	Num       int     `json:"num"`
	State     string  `json:"state"`      // "ACTIVE", "DOWN", ... (without the "4: " prefix)
	PhysState string  `json:"phys_state"` // "LinkUp", "Disabled", ...
	Rate      string  `json:"rate"`       // "400 Gb/sec (4X NDR)"
	RateGbps  float64 `json:"rate_gbps"`  // 400
	LinkLayer string  `json:"link_layer"` // "InfiniBand" | "Ethernet"
	// RoCEv2GIDs are the GID indexes of type "RoCE v2" with a non-zero GID.
	RoCEv2GIDs []int `json:"rocev2_gids,omitempty"`
	// RoutableRoCEv2GIDs are those of RoCEv2GIDs that are not IPv6
	// link-local (fe80::/10): an IPv4-mapped or global IPv6 address, which
	// RoCE v2 can route and NCCL selects (NCCL_IB_ADDR_FAMILY). A port up
	// without an IP address has only the link-local one.
	RoutableRoCEv2GIDs []int `json:"routable_rocev2_gids,omitempty"`
}

// Name is the NIC's one-string name where tables know NICs by name: its
// RDMA device ("mlx5_3"), else its PCI address. The fabric ports a node
// publishes (fabric.Port.NIC) and the leaves the DRA driver reads back
// (dra.Options.Leaves) are keyed by it.
func (n NIC) Name() string { return cmp.Or(n.RDMA, n.PCI) }

// Healthy reports whether the NIC can carry RDMA traffic: see Health.
// Rails prefer healthy NICs.
func (n NIC) Healthy() bool {
	ok, _ := n.Health()
	return ok
}

// Health is the one health rule of a NIC, used by rails, pools and
// policies alike: it needs at least one port, every port ACTIVE with its
// physical link up (Port.Active), no Degraded mark and no Refused one.
// reason says why not.
func (n NIC) Health() (ok bool, reason string) {
	if ok, reason := portsHealth(n.Ports); !ok {
		return false, reason
	}
	if n.Degraded != "" {
		return false, "degraded: " + n.Degraded
	}
	if n.Refused != "" {
		return false, n.Refused
	}
	return true, ""
}

// VFHealth is the health rule of one of the NIC's VFs: the PF's health
// first (a VF's link is its PF's), then the VF's own ports; a VF whose
// ports could not be read (no RDMA device of its own, or none readable)
// takes its PF's.
func (n NIC) VFHealth(vf VF) (ok bool, reason string) {
	if ok, reason := n.Health(); !ok {
		return false, "PF " + n.PCI + ": " + reason
	}
	if len(vf.Ports) == 0 {
		return true, ""
	}
	return portsHealth(vf.Ports)
}

func portsHealth(ports []Port) (bool, string) {
	if len(ports) == 0 {
		return false, "no RDMA ports"
	}
	for _, p := range ports {
		if !p.Active() {
			state := p.State
			if state == "" {
				state = "unreadable" // discovery could not read or parse it
			}
			return false, fmt.Sprintf("port %d is %s/%s", p.Num, state, p.PhysState)
		}
	}
	return true, ""
}

// Active reports whether the port is usable: state ACTIVE and physical
// state LinkUp (or unknown physical state).
func (p Port) Active() bool {
	return p.State == "ACTIVE" && (p.PhysState == "" || p.PhysState == "LinkUp")
}

// VF is an SR-IOV virtual function of a NIC.
type VF struct {
	Index  int    `json:"index"` // N of virtfnN
	PCI    string `json:"pci"`
	Driver string `json:"driver,omitempty"` // "mlx5_core", "vfio-pci", ""
	Netdev string `json:"netdev,omitempty"` // "" when bound to vfio or unbound
	RDMA   string `json:"rdma,omitempty"`
	Uverbs string `json:"uverbs,omitempty"`
	UMAD   string `json:"umad,omitempty"`
	ISSM   string `json:"issm,omitempty"`
	Ports  []Port `json:"ports,omitempty"`
}

// Link is the distance class between one GPU and one NIC.
type Link struct {
	GPU   string `json:"gpu"`
	NIC   string `json:"nic"`
	Class Class  `json:"class"`
	// Source says where the class comes from when it is not the PCI tree
	// in sysfs: "nccl-topo" for an NCCL topology file. "" means sysfs.
	Source string `json:"source,omitempty"`
}

// Warning is a problem found during discovery. Path is the sysfs path or
// PCI address concerned.
type Warning struct {
	Path    string `json:"path"`
	Message string `json:"message"`
}

func (w Warning) String() string {
	if w.Path == "" {
		return w.Message
	}
	return w.Path + ": " + w.Message
}
