package pool

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/railyard-io/railyard/api/config/v1alpha1"
	"github.com/railyard-io/railyard/internal/pciaddr"
	"github.com/railyard-io/railyard/internal/topology"
)

// Device is one device of a pool, named by its PCI address.
type Device struct {
	// ID is the device ID given to kubelet: the PCI address of the VF or
	// PF, or for a share of a PF "<PF address>-s<share>" (deviceid.Share).
	ID string
	// Kind is v1alpha1.KindVF, KindPF or KindShared.
	Kind string
	// Share is the share index of a shared device, -1 otherwise.
	Share int
	// Rail is the index of the rail the device's PF serves (its first GPU
	// in the topology's GPU order), -1 when the PF is no GPU's rail.
	Rail int
	// PF is the PCI address of the physical function (ID itself for a PF).
	PF string
	// PFNetdev is the first netdev of the PF ("" if none).
	PFNetdev string
	// VFIndex is N of the PF's virtfnN, -1 for a PF.
	VFIndex int
	Vendor  uint16
	// Device is the function's own PCI device ID (0 when discovery did not
	// read it); PFDevice is its PF's (Device itself for a PF).
	Device   uint16
	PFDevice uint16
	Driver   string
	// NUMA is the device's NUMA node, -1 when unknown.
	NUMA int
	// RDMA is the RDMA device ("mlx5_3"); Uverbs its verbs char device
	// ("uverbs3"). Both "" when the device has no RDMA.
	RDMA   string
	Uverbs string
	// UMAD and ISSM are the function's management datagram char devices
	// ("umad0", "issm0"), "" when absent.
	UMAD, ISSM string
	Netdev     string
	// LinkLayer is "InfiniBand" or "Ethernet" ("" when unknown).
	LinkLayer string
	// Healthy is false when a port is not ACTIVE/LinkUp, the PF's link is
	// down, or the device has no usable verbs device; Reason says why.
	Healthy bool
	Reason  string
}

// RDMACapable reports whether the device has an RDMA and a verbs device.
func (d Device) RDMACapable() bool { return d.RDMA != "" && d.Uverbs != "" }

// Selector is a compiled pool selection.
type Selector struct {
	kind      string
	shares    int // shares per NIC of a shared pool
	vendors   map[uint16]bool
	devices   map[uint16]bool
	drivers   map[string]bool
	pfNames   []v1alpha1.PFName
	addrs     map[string]bool
	layers    map[string]bool
	rdma      *bool
	numaNodes map[int]bool
}

// Compile turns a validated pool into a Selector.
func Compile(p v1alpha1.Pool) (Selector, error) {
	s := Selector{kind: p.DeviceKind, rdma: p.Selectors.RDMACapable}
	if s.kind == "" {
		s.kind = v1alpha1.KindVF
	}
	switch s.kind {
	case v1alpha1.KindVF, v1alpha1.KindPF:
	case v1alpha1.KindShared:
		s.shares = v1alpha1.DefaultSharedLimit
		if p.SharedLimit != nil {
			s.shares = *p.SharedLimit
		}
		if s.shares < 1 || s.shares > v1alpha1.MaxSharedLimit {
			return Selector{}, fmt.Errorf("pool %s: sharedLimit %d is not 1-%d", p.Name, s.shares, v1alpha1.MaxSharedLimit)
		}
	default:
		return Selector{}, fmt.Errorf("pool %s: unknown device kind %q", p.Name, s.kind)
	}
	var err error
	if s.vendors, err = hexSet(p.Selectors.Vendors); err != nil {
		return Selector{}, fmt.Errorf("pool %s: vendors: %w", p.Name, err)
	}
	if s.devices, err = hexSet(p.Selectors.Devices); err != nil {
		return Selector{}, fmt.Errorf("pool %s: devices: %w", p.Name, err)
	}
	s.drivers = stringSet(p.Selectors.Drivers)
	s.layers = stringSet(p.Selectors.LinkLayers)
	s.addrs = map[string]bool{}
	for _, a := range p.Selectors.PCIAddresses {
		c, err := pciaddr.Normalize(a) // devices carry the canonical form
		if err != nil {
			return Selector{}, fmt.Errorf("pool %s: pciAddresses: %w", p.Name, err)
		}
		s.addrs[c] = true
	}
	for _, n := range p.Selectors.PFNames {
		pf, err := v1alpha1.ParsePFName(n)
		if err != nil {
			return Selector{}, fmt.Errorf("pool %s: pfNames: %w", p.Name, err)
		}
		s.pfNames = append(s.pfNames, pf)
	}
	if len(p.Selectors.NUMANodes) > 0 {
		s.numaNodes = map[int]bool{}
		for _, n := range p.Selectors.NUMANodes {
			s.numaNodes[n] = true
		}
	}
	return s, nil
}

// Shares is the shares per NIC of a shared pool (its sharedLimit), 0 for
// other kinds.
func (s Selector) Shares() int { return s.shares }

// Select returns the pool's devices in t, sorted by ID. A shared pool
// returns SharedLimit shares of every matching NIC, each with the NIC's
// health.
func (s Selector) Select(t *topology.Topology) []Device {
	var out []Device
	rails := t.NICRails()
	for _, nic := range t.NICs {
		pfHealthy, pfReason := nic.Health()
		rail, onRail := rails[nic.PCI]
		if !onRail {
			rail = -1
		}
		switch s.kind {
		case v1alpha1.KindPF:
			d := pfDevice(nic, pfHealthy, pfReason)
			d.Rail = rail
			if s.matches(d, nic.Netdevs) {
				out = append(out, d)
			}
		case v1alpha1.KindShared:
			d := pfDevice(nic, pfHealthy, pfReason)
			d.Rail = rail
			if s.matches(d, nic.Netdevs) {
				out = append(out, shares(d, s.shares)...)
			}
		default:
			for _, vf := range nic.VFs {
				d := vfDevice(t, nic, vf)
				d.Rail = rail
				if s.matches(d, nic.Netdevs) {
					out = append(out, d)
				}
			}
		}
	}
	slices.SortFunc(out, func(a, b Device) int { return strings.Compare(a.ID, b.ID) })
	return out
}

func pfDevice(nic topology.NIC, healthy bool, reason string) Device {
	d := Device{
		ID: nic.PCI, Kind: v1alpha1.KindPF, Share: -1, PF: nic.PCI, PFNetdev: nic.Netdev, VFIndex: -1,
		Vendor: nic.Vendor, Device: nic.Device, PFDevice: nic.Device, Driver: nic.Driver, NUMA: nic.NUMA,
		RDMA: nic.RDMA, Uverbs: nic.Uverbs, UMAD: nic.UMAD, ISSM: nic.ISSM, Netdev: nic.Netdev, LinkLayer: nic.LinkLayer,
		Healthy: healthy, Reason: reason,
	}
	d.Healthy, d.Reason = verbsHealthy(d, healthy, reason)
	return d
}

func vfDevice(t *topology.Topology, nic topology.NIC, vf topology.VF) Device {
	d := Device{
		ID: vf.PCI, Kind: v1alpha1.KindVF, Share: -1, PF: nic.PCI, PFNetdev: nic.Netdev, VFIndex: vf.Index,
		Vendor: nic.Vendor, PFDevice: nic.Device, Driver: vf.Driver, NUMA: nic.NUMA,
		RDMA: vf.RDMA, Uverbs: vf.Uverbs, UMAD: vf.UMAD, ISSM: vf.ISSM, Netdev: vf.Netdev, LinkLayer: nic.LinkLayer,
	}
	if pd, ok := t.Device(vf.PCI); ok {
		if pd.Vendor != 0 {
			d.Vendor = pd.Vendor
		}
		d.Device = pd.Device
		if pd.NUMA >= 0 {
			d.NUMA = pd.NUMA
		}
	}
	if len(vf.Ports) > 0 && vf.Ports[0].LinkLayer != "" {
		d.LinkLayer = vf.Ports[0].LinkLayer
	}
	healthy, reason := nic.VFHealth(vf)
	d.Healthy, d.Reason = verbsHealthy(d, healthy, reason)
	return d
}

// verbsHealthy marks a device without a verbs device unhealthy when it is
// otherwise healthy: it cannot be handed out usefully.
func verbsHealthy(d Device, healthy bool, reason string) (bool, string) {
	if healthy && !d.RDMACapable() {
		return false, "no RDMA verbs device (driver " + strconv.Quote(d.Driver) + ")"
	}
	return healthy, reason
}

func (s Selector) matches(d Device, pfNetdevs []string) bool {
	if len(s.vendors) > 0 && !s.vendors[d.Vendor] {
		return false
	}
	if len(s.devices) > 0 && !s.devices[d.Device] && !(d.Kind == v1alpha1.KindVF && s.devices[d.PFDevice]) {
		return false
	}
	if len(s.drivers) > 0 && !s.drivers[d.Driver] {
		return false
	}
	if len(s.addrs) > 0 && !s.addrs[d.ID] && !s.addrs[d.PF] {
		return false
	}
	if len(s.layers) > 0 && !s.layers[d.LinkLayer] {
		return false
	}
	if s.rdma != nil && *s.rdma != d.RDMACapable() {
		return false
	}
	if s.numaNodes != nil && !s.numaNodes[d.NUMA] {
		return false
	}
	if len(s.pfNames) > 0 && !s.matchesPFName(d, pfNetdevs) {
		return false
	}
	return true
}

func (s Selector) matchesPFName(d Device, pfNetdevs []string) bool {
	for _, pf := range s.pfNames {
		if !slices.Contains(pfNetdevs, pf.Name) {
			continue
		}
		if d.Kind == v1alpha1.KindPF || pf.Contains(d.VFIndex) {
			return true
		}
	}
	return false
}

func hexSet(list []string) (map[uint16]bool, error) {
	out := map[uint16]bool{}
	for _, s := range list {
		v, err := strconv.ParseUint(strings.TrimPrefix(strings.ToLower(s), "0x"), 16, 16)
		if err != nil {
			return nil, fmt.Errorf("%q is not a hex ID: %w", s, err)
		}
		out[uint16(v)] = true
	}
	return out, nil
}

func stringSet(list []string) map[string]bool {
	out := make(map[string]bool, len(list))
	for _, s := range list {
		out[s] = true
	}
	return out
}
