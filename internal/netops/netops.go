package netops

import (
	"context"
	"errors"
	"net"
	"slices"

	"github.com/containernetworking/cni/pkg/types"
	current "github.com/containernetworking/cni/pkg/types/100"
)

// Host names the namespace the caller runs in.
const Host = ""

// ErrLinkNotFound is returned (wrapped) when a link does not exist in the
// namespace asked about.
var ErrLinkNotFound = errors.New("link not found")

// ErrNetnsNotFound is returned (wrapped) when a namespace path does not exist
// or is not a network namespace.
var ErrNetnsNotFound = errors.New("network namespace not found")

// ErrRDMANotFound is returned (wrapped) when an RDMA device is not visible in
// the namespace asked about.
var ErrRDMANotFound = errors.New("RDMA device not found")

// Link is a snapshot of a network interface's settings that railyard-cni
// changes and restores.
type Link struct {
	Name     string           `json:"name"`
	Index    int              `json:"index"`
	MTU      int              `json:"mtu"`
	MAC      net.HardwareAddr `json:"-"`
	Up       bool             `json:"up"`
	Alias    string           `json:"alias,omitempty"`
	AltNames []string         `json:"altNames,omitempty"`
}

// HasName reports whether name is the link's name or one of its altnames.
func (l Link) HasName(name string) bool {
	return l.Name == name || slices.Contains(l.AltNames, name)
}

// VF link states (IFLA_VF_LINK_STATE_*).
const (
	VFLinkStateAuto    uint32 = 0
	VFLinkStateEnable  uint32 = 1
	VFLinkStateDisable uint32 = 2
)

// VFSettings are the settings of one SR-IOV virtual function that are made
// through its physical function. Rates are in Mbit/s.
type VFSettings struct {
	VLAN int `json:"vlan"`
	QoS  int `json:"qos"`
	// VLANProto is the VLAN's EtherType: VLANProto8021Q or VLANProto8021AD;
	// 0 where the kernel does not report it (it then means 802.1Q).
	VLANProto int    `json:"vlanProto,omitempty"`
	SpoofChk  bool   `json:"spoofchk"`
	Trust     bool   `json:"trust"`
	LinkState uint32 `json:"linkState"`
	MinTxRate int    `json:"minTxRate"`
	MaxTxRate int    `json:"maxTxRate"`
}

// VLAN protocols of a VF VLAN (IFLA_VF_VLAN_INFO vlan_proto).
const (
	VLANProto8021Q  = 0x8100
	VLANProto8021AD = 0x88a8
)

// SameVLANProto reports whether two VLAN protocols are the same, 0 (not
// reported) counting as 802.1Q.
func SameVLANProto(a, b int) bool {
	norm := func(p int) int {
		if p == 0 {
			return VLANProto8021Q
		}
		return p
	}
	return norm(a) == norm(b)
}

// MacvlanModes are the macvlan modes AddMacvlan accepts.
var MacvlanModes = []string{"bridge", "private", "vepa", "passthru"}

// Ops is every OS side effect railyard-cni performs. Namespace arguments are
// paths; Host ("") is the caller's own namespace.
type Ops interface {
	// NetnsExists reports whether path is an existing network namespace.
	NetnsExists(ctx context.Context, netns string) (bool, error)
	// SameNetns reports whether a and b are the same network namespace,
	// by identity, not by path (/proc/self/ns/net is the host's own).
	SameNetns(ctx context.Context, a, b string) (bool, error)
	// Link returns the link called name (or with altname name) in netns.
	Link(ctx context.Context, netns, name string) (Link, error)
	// LinkByAlias returns the first link in netns whose alias is alias.
	LinkByAlias(ctx context.Context, netns, alias string) (Link, error)
	SetLinkUp(ctx context.Context, netns, name string, up bool) error
	RenameLink(ctx context.Context, netns, name, newName string) error
	SetMTU(ctx context.Context, netns, name string, mtu int) error
	SetMAC(ctx context.Context, netns, name string, mac net.HardwareAddr) error
	SetAlias(ctx context.Context, netns, name, alias string) error
	AddAltName(ctx context.Context, netns, name, altName string) error
	DelAltName(ctx context.Context, netns, name, altName string) error
	// AddMacvlan creates a macvlan link name on the host netdev parent, in
	// the host namespace, in mode ("bridge", "private", "vepa", "passthru").
	AddMacvlan(ctx context.Context, parent, name, mode string) error
	// DeleteLink deletes link name in netns (only virtual links should be).
	DeleteLink(ctx context.Context, netns, name string) error
	// MoveLink moves link name from namespace from to namespace to.
	MoveLink(ctx context.Context, from, name, to string) error
	// ConfigureIPs applies a result's addresses and routes to link name.
	ConfigureIPs(ctx context.Context, netns, name string, res *current.Result) error
	// CheckIPs verifies that link name carries ips and that routes exist.
	CheckIPs(ctx context.Context, netns, name string, ips []*current.IPConfig, routes []*types.Route) error

	// Sysctl reads a sysctl of netns, name a path below /proc/sys/net
	// (IfaceSysctl); an interface's vanish with it (fs.ErrNotExist).
	Sysctl(ctx context.Context, netns, name string) (string, error)
	// SetSysctl writes it. An interface's sysctls do not travel with it:
	// moved to another namespace it gets that one's defaults.
	SetSysctl(ctx context.Context, netns, name, value string) error
	// AddRoute adds r in netns. A route through a link goes when the
	// link leaves the namespace.
	AddRoute(ctx context.Context, netns string, r Route) error
	// Routes lists the routes of table in netns.
	Routes(ctx context.Context, netns string, table int) ([]Route, error)
	// AddRule adds a routing rule in netns (syscall.EEXIST when it is
	// there). Rules name no link: they stay until deleted or the
	// namespace goes.
	AddRule(ctx context.Context, netns string, r Rule) error
	// Rules lists the rules of netns, IPv4 then IPv6, that look up a
	// table other than local, main and default.
	Rules(ctx context.Context, netns string) ([]Rule, error)
	// DelRule deletes a rule of netns (syscall.ENOENT when it is not there).
	DelRule(ctx context.Context, netns string, r Rule) error
	// WithSysfs runs f with root a sysfs that shows netns: its netdevs
	// and the RDMA devices in it (an RDMA device moved into a pod in
	// exclusive netns mode is only seen by a sysfs mounted in the pod's
	// namespace). Read it through internal/sysfs, in f only.
	WithSysfs(ctx context.Context, netns string, f func(root string) error) error

	// VF returns the settings of virtual function vf of the PF netdev pf.
	VF(ctx context.Context, pf string, vf int) (VFSettings, error)
	// SetVFVLAN sets the VF's VLAN, QoS and VLAN protocol (0 = 802.1Q
	// through the older attribute every driver accepts).
	SetVFVLAN(ctx context.Context, pf string, vf, vlan, qos, proto int) error
	// SetVFGUID sets an InfiniBand VF's node and port GUID (8 bytes).
	SetVFGUID(ctx context.Context, pf string, vf int, guid net.HardwareAddr) error
	// SetVFMAC sets an Ethernet VF's MAC (6 bytes).
	SetVFMAC(ctx context.Context, pf string, vf int, mac net.HardwareAddr) error
	// VFAddresses returns the VF's MAC and GUIDs as the PF reports them.
	VFAddresses(ctx context.Context, pf string, vf int) (VFAddresses, error)
	SetVFSpoofChk(ctx context.Context, pf string, vf int, on bool) error
	SetVFTrust(ctx context.Context, pf string, vf int, on bool) error
	SetVFLinkState(ctx context.Context, pf string, vf int, state uint32) error
	SetVFRate(ctx context.Context, pf string, vf, minRate, maxRate int) error

	// RDMANetnsMode returns the RDMA subsystem netns mode ("exclusive" or
	// "shared").
	RDMANetnsMode(ctx context.Context) (string, error)
	// RDMADeviceIn reports whether RDMA device dev is visible in netns.
	RDMADeviceIn(ctx context.Context, netns, dev string) (bool, error)
	// MoveRDMA moves RDMA device dev from namespace from to namespace to.
	MoveRDMA(ctx context.Context, from, dev, to string) error
}
