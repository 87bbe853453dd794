package netopstest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"

	"github.com/containernetworking/cni/pkg/types"
	current "github.com/containernetworking/cni/pkg/types/100"

	"github.com/railyard-io/railyard/internal/netops"
)

// ErrInjected is the error returned by an injected failure.
var ErrInjected = errors.New("injected failure")

type fakeLink struct {
	netops.Link
	virtual bool // destroyed with its namespace (veth); else refunded to host
	maxMTU  int  // a macvlan's MTU cannot exceed its parent's (0: no limit)
	addrs   []string
	routes  []netops.Route    // routes through it, any table (they go with it)
	sysctls map[string]string // "ipv4/arp_ignore" -> value (reset when it moves)
}

// leave is what a link loses when it leaves its namespace: it comes down,
// and its addresses, routes and sysctls stay behind (gone).
func (l *fakeLink) leave() {
	l.Up, l.addrs, l.routes, l.sysctls = false, nil, nil, nil
}

// Fake is an in-memory netops.Ops. Its zero value is not usable: call New.
type Fake struct {
	mu        sync.Mutex
	ns        map[string]map[string]*fakeLink // namespace -> name -> link
	rdma      map[string]string               // RDMA device -> namespace
	rdmaMode  string
	vfs       map[string]map[int]netops.VFSettings
	guids     map[string]map[int]string // PF -> VF -> GUID set through the PF
	macs      map[string]map[int]string // PF -> VF -> MAC the PF reports
	adminMAC  map[vfRef]bool            // an administrative MAC is set
	vfNetdevs map[int]vfRef             // ifindex -> the VF it is the netdev of
	aliases   map[string]string         // namespace path -> the path it names
	dcb       map[string]netops.DCB     // host netdev -> its DCB settings (a DCB-capable NIC)
	rules     map[string][]netops.Rule  // namespace -> its routing rules
	nsSysctls map[string]map[string]string
	sysfs     map[string]string // namespace -> the sysfs tree WithSysfs shows
	calls     []string
	mutations int
	failAt    int
	nextIndex int
	nextDev   int
}

var _ netops.Ops = (*Fake)(nil)

// New returns a Fake with only the host namespace and the RDMA subsystem in
// exclusive mode.
func New() *Fake {
	return &Fake{
		ns:        map[string]map[string]*fakeLink{netops.Host: {}},
		rdma:      map[string]string{},
		rdmaMode:  "exclusive",
		vfs:       map[string]map[int]netops.VFSettings{},
		guids:     map[string]map[int]string{},
		nextIndex: 10,
	}
}

// AliasNetns makes path another name of namespace target, as
// /proc/self/ns/net is of the host's (SameNetns only).
func (f *Fake) AliasNetns(path, target string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.aliases == nil {
		f.aliases = map[string]string{}
	}
	f.aliases[path] = target
}

// SameNetns implements netops.Ops.
func (f *Fake) SameNetns(_ context.Context, a, b string) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	_ = f.record(false, "SameNetns(%q, %q)", a, b)
	resolve := func(p string) string {
		if t, ok := f.aliases[p]; ok {
			return t
		}
		return p
	}
	return resolve(a) == resolve(b), nil
}

// AddNetns creates an empty namespace at path.
func (f *Fake) AddNetns(path string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ns[path] = map[string]*fakeLink{}
}

// DeleteNetns destroys namespace path the way the kernel does: virtual links
// are destroyed, physical ones return to the host under their name (or
// "devN" when it is taken), RDMA devices return to the host.
func (f *Fake) DeleteNetns(path string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	links := f.ns[path]
	delete(f.ns, path)
	for _, l := range links {
		if l.virtual {
			continue
		}
		if f.lookup(netops.Host, l.Name) != nil {
			l.Name = fmt.Sprintf("dev%d", f.nextDev)
			f.nextDev++
		}
		l.leave()
		f.ns[netops.Host][l.Name] = l
	}
	delete(f.rules, path)
	delete(f.nsSysctls, path)
	for dev, where := range f.rdma {
		if where == path {
			f.rdma[dev] = netops.Host
		}
	}
}

// AddLink creates a link in namespace path. A virtual link is destroyed with
// its namespace; a physical one is refunded to the host.
func (f *Fake) AddLink(path string, l netops.Link, virtual bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if l.Index == 0 {
		l.Index = f.nextIndex
		f.nextIndex++
	}
	l.MAC = slices.Clone(l.MAC)
	l.AltNames = slices.Clone(l.AltNames)
	f.ns[path][l.Name] = &fakeLink{Link: l, virtual: virtual}
}

// AddVF registers virtual function vf of PF netdev pf with its settings.
// A VLANProto of 0 reads back as 802.1Q (0x8100), as from the kernel,
// which fills in 802.1Q before asking the driver.
func (f *Fake) AddVF(pf string, vf int, s netops.VFSettings) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.vfs[pf] == nil {
		f.vfs[pf] = map[int]netops.VFSettings{}
	}
	if s.VLANProto == 0 {
		s.VLANProto = netops.VLANProto8021Q // the kernel reports 802.1Q so
	}
	f.vfs[pf][vf] = s
}

// AddRDMA registers RDMA device dev in namespace path.
func (f *Fake) AddRDMA(dev, path string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rdma[dev] = path
}

// SetRDMAMode sets the RDMA netns mode ("exclusive" or "shared").
func (f *Fake) SetRDMAMode(mode string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rdmaMode = mode
}

// FailAtMutation makes the k-th mutating call from now on (1-based) fail
// with ErrInjected and no effect; 0 disables injection.
func (f *Fake) FailAtMutation(k int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.mutations, f.failAt = 0, k
}

// Mutations returns how many mutating calls were made since the last
// FailAtMutation (or since New).
func (f *Fake) Mutations() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.mutations
}

// Calls returns the log of every call, "Method(args)".
func (f *Fake) Calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

// LinkIn returns a copy of link name in namespace path.
func (f *Fake) LinkIn(path, name string) (netops.Link, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	l := f.lookup(path, name)
	if l == nil {
		return netops.Link{}, false
	}
	c := l.Link
	c.MAC, c.AltNames = slices.Clone(c.MAC), slices.Clone(c.AltNames)
	return c, true
}

// LinkNames returns the sorted link names in namespace path.
func (f *Fake) LinkNames(path string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for n := range f.ns[path] {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Addrs returns the addresses configured on link name in namespace path.
func (f *Fake) Addrs(path, name string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if l := f.lookup(path, name); l != nil {
		return slices.Clone(l.addrs)
	}
	return nil
}

// VFSettingsOf returns the current settings of a VF.
func (f *Fake) VFSettingsOf(pf string, vf int) netops.VFSettings {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.vfs[pf][vf]
}

// RDMANetns returns the namespace RDMA device dev is in.
func (f *Fake) RDMANetns(dev string) (string, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p, ok := f.rdma[dev]
	return p, ok
}

// lookup finds a link by name or altname; f.mu must be held.
func (f *Fake) lookup(path, name string) *fakeLink {
	for _, l := range f.ns[path] {
		if l.HasName(name) {
			return l
		}
	}
	return nil
}

// record logs a call and, for a mutating one, decides whether it fails.
// f.mu must be held.
func (f *Fake) record(mutating bool, format string, args ...any) error {
	call := fmt.Sprintf(format, args...)
	f.calls = append(f.calls, call)
	if !mutating {
		return nil
	}
	f.mutations++
	if f.failAt > 0 && f.mutations == f.failAt {
		return fmt.Errorf("%s: %w", call, ErrInjected)
	}
	return nil
}

func (f *Fake) nsLinks(path string) (map[string]*fakeLink, error) {
	links, ok := f.ns[path]
	if !ok {
		return nil, fmt.Errorf("%s: %w", path, netops.ErrNetnsNotFound)
	}
	return links, nil
}

func (f *Fake) link(path, name string) (*fakeLink, error) {
	if _, err := f.nsLinks(path); err != nil {
		return nil, err
	}
	l := f.lookup(path, name)
	if l == nil {
		return nil, fmt.Errorf("%s in %q: %w", name, path, netops.ErrLinkNotFound)
	}
	return l, nil
}

// mutate runs change on link name after recording the call.
func (f *Fake) mutate(path, name string, change func(l *fakeLink) error, format string, args ...any) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record(true, format, args...); err != nil {
		return err
	}
	l, err := f.link(path, name)
	if err != nil {
		return err
	}
	return change(l)
}

// NetnsExists implements netops.Ops.
func (f *Fake) NetnsExists(_ context.Context, path string) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	_ = f.record(false, "NetnsExists(%q)", path)
	_, ok := f.ns[path]
	return ok, nil
}

// Link implements netops.Ops.
func (f *Fake) Link(_ context.Context, path, name string) (netops.Link, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	_ = f.record(false, "Link(%q, %s)", path, name)
	l, err := f.link(path, name)
	if err != nil {
		return netops.Link{}, err
	}
	c := l.Link
	c.MAC, c.AltNames = slices.Clone(c.MAC), slices.Clone(c.AltNames)
	return c, nil
}

// LinkByAlias implements netops.Ops.
func (f *Fake) LinkByAlias(_ context.Context, path, alias string) (netops.Link, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	_ = f.record(false, "LinkByAlias(%q, %s)", path, alias)
	links, err := f.nsLinks(path)
	if err != nil {
		return netops.Link{}, err
	}
	for _, l := range links {
		if l.Alias == alias {
			c := l.Link
			c.MAC, c.AltNames = slices.Clone(c.MAC), slices.Clone(c.AltNames)
			return c, nil
		}
	}
	return netops.Link{}, fmt.Errorf("alias %q: %w", alias, netops.ErrLinkNotFound)
}

// SetLinkUp implements netops.Ops.
func (f *Fake) SetLinkUp(_ context.Context, path, name string, up bool) error {
	return f.mutate(path, name, func(l *fakeLink) error {
		l.Up = up
		if up {
			f.vfAnnouncesMAC(l.Index, l.MAC)
		}
		return nil
	}, "SetLinkUp(%q, %s, %v)", path, name, up)
}

func validName(n string) error {
	if n == "" || len(n) > 15 || strings.ContainsAny(n, "/: \t") {
		return fmt.Errorf("invalid interface name %q: %w", n, syscall.EINVAL)
	}
	return nil
}

// RenameLink implements netops.Ops.
func (f *Fake) RenameLink(_ context.Context, path, name, newName string) error {
	return f.mutate(path, name, func(l *fakeLink) error {
		if err := validName(newName); err != nil {
			return err
		}
		if other := f.lookup(path, newName); other != nil && other != l {
			return fmt.Errorf("renaming %s to %s: %w", name, newName, syscall.EEXIST)
		}
		if l.Up {
			return fmt.Errorf("renaming %s: %w", name, syscall.EBUSY)
		}
		links := f.ns[path]
		delete(links, l.Name)
		l.Name = newName
		links[newName] = l
		return nil
	}, "RenameLink(%q, %s, %s)", path, name, newName)
}

// SetMTU implements netops.Ops.
func (f *Fake) SetMTU(_ context.Context, path, name string, mtu int) error {
	return f.mutate(path, name, func(l *fakeLink) error {
		if mtu < 68 || mtu > 65535 || (l.maxMTU > 0 && mtu > l.maxMTU) {
			return fmt.Errorf("MTU %d: %w", mtu, syscall.EINVAL)
		}
		l.MTU = mtu
		return nil
	}, "SetMTU(%q, %s, %d)", path, name, mtu)
}

// SetMAC implements netops.Ops.
func (f *Fake) SetMAC(_ context.Context, path, name string, mac net.HardwareAddr) error {
	return f.mutate(path, name, func(l *fakeLink) error {
		if err := f.vfSetsMAC(l.Index, l.Up, mac); err != nil {
			return err
		}
		l.MAC = slices.Clone(mac)
		return nil
	}, "SetMAC(%q, %s, %s)", path, name, mac)
}

// SetAlias implements netops.Ops.
func (f *Fake) SetAlias(_ context.Context, path, name, alias string) error {
	return f.mutate(path, name, func(l *fakeLink) error { l.Alias = alias; return nil },
		"SetAlias(%q, %s, %q)", path, name, alias)
}

// AddAltName implements netops.Ops.
func (f *Fake) AddAltName(_ context.Context, path, name, alt string) error {
	return f.mutate(path, name, func(l *fakeLink) error {
		if f.lookup(path, alt) != nil {
			return fmt.Errorf("altname %s: %w", alt, syscall.EEXIST)
		}
		l.AltNames = append(l.AltNames, alt)
		return nil
	}, "AddAltName(%q, %s, %s)", path, name, alt)
}

// DelAltName implements netops.Ops.
func (f *Fake) DelAltName(_ context.Context, path, name, alt string) error {
	return f.mutate(path, name, func(l *fakeLink) error {
		i := slices.Index(l.AltNames, alt)
		if i < 0 {
			return fmt.Errorf("altname %s: %w", alt, syscall.ENOENT)
		}
		l.AltNames = slices.Delete(l.AltNames, i, i+1)
		return nil
	}, "DelAltName(%q, %s, %s)", path, name, alt)
}

// MoveLink implements netops.Ops.
func (f *Fake) MoveLink(_ context.Context, from, name, to string) error {
	return f.mutate(from, name, func(l *fakeLink) error {
		target, err := f.nsLinks(to)
		if err != nil {
			return err
		}
		for _, n := range append([]string{l.Name}, l.AltNames...) {
			if f.lookup(to, n) != nil {
				return fmt.Errorf("moving %s: name %s exists in target: %w", name, n, syscall.EEXIST)
			}
		}
		delete(f.ns[from], l.Name)
		l.leave()
		target[l.Name] = l
		return nil
	}, "MoveLink(%q, %s, %q)", from, name, to)
}

// AddMacvlan implements netops.Ops: a virtual link on the host, with a
// new index and a MAC derived from it.
func (f *Fake) AddMacvlan(_ context.Context, parent, name, mode string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record(true, "AddMacvlan(%s, %s, %s)", parent, name, mode); err != nil {
		return err
	}
	if !slices.Contains(netops.MacvlanModes, mode) {
		return fmt.Errorf("macvlan mode %q: %w", mode, syscall.EINVAL)
	}
	p, err := f.link(netops.Host, parent)
	if err != nil {
		return err
	}
	if f.lookup(netops.Host, name) != nil {
		return fmt.Errorf("creating macvlan %s: %w", name, syscall.EEXIST)
	}
	idx := f.nextIndex
	f.nextIndex++
	f.ns[netops.Host][name] = &fakeLink{Link: netops.Link{Name: name, Index: idx, MTU: p.MTU,
		MAC: net.HardwareAddr{0x02, 0x4d, 0x56, 0, byte(idx >> 8), byte(idx)}}, virtual: true, maxMTU: p.MTU}
	return nil
}

// DeleteLink implements netops.Ops.
func (f *Fake) DeleteLink(_ context.Context, path, name string) error {
	return f.mutate(path, name, func(l *fakeLink) error {
		delete(f.ns[path], l.Name)
		return nil
	}, "DeleteLink(%q, %s)", path, name)
}

// ConfigureIPs implements netops.Ops.
func (f *Fake) ConfigureIPs(_ context.Context, path, name string, res *current.Result) error {
	return f.mutate(path, name, func(l *fakeLink) error {
		for _, ip := range res.IPs {
			l.addrs = append(l.addrs, ip.Address.String())
		}
		return nil
	}, "ConfigureIPs(%q, %s)", path, name)
}

// CheckIPs implements netops.Ops.
func (f *Fake) CheckIPs(_ context.Context, path, name string, ips []*current.IPConfig, _ []*types.Route) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	_ = f.record(false, "CheckIPs(%q, %s)", path, name)
	l, err := f.link(path, name)
	if err != nil {
		return err
	}
	for _, ip := range ips {
		if !slices.Contains(l.addrs, ip.Address.String()) {
			return fmt.Errorf("%s lacks address %s", name, ip.Address.String())
		}
	}
	return nil
}

func (f *Fake) vf(pf string, vf int) (netops.VFSettings, error) {
	s, ok := f.vfs[pf][vf]
	if !ok {
		return s, fmt.Errorf("PF %s has no VF %d", pf, vf)
	}
	return s, nil
}

// VF implements netops.Ops.
func (f *Fake) VF(_ context.Context, pf string, vf int) (netops.VFSettings, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	_ = f.record(false, "VF(%s, %d)", pf, vf)
	return f.vf(pf, vf)
}

func (f *Fake) setVF(pf string, vf int, change func(*netops.VFSettings), format string, args ...any) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record(true, format, args...); err != nil {
		return err
	}
	s, err := f.vf(pf, vf)
	if err != nil {
		return err
	}
	change(&s)
	f.vfs[pf][vf] = s
	return nil
}

// SetVFVLAN implements netops.Ops. Like the kernel, it reports 802.1Q as
// 0x8100 once a protocol has been given, and a VLAN of 0 as protocol 0x8100.
func (f *Fake) SetVFVLAN(_ context.Context, pf string, vf, vlan, qos, proto int) error {
	if proto != 0 && proto != netops.VLANProto8021Q && proto != netops.VLANProto8021AD {
		return fmt.Errorf("setting vlan of VF %d through PF %s: invalid argument (protocol %#x)", vf, pf, proto)
	}
	if proto == netops.VLANProto8021AD && vlan == 0 {
		return fmt.Errorf("setting vlan of VF %d through PF %s: invalid argument (802.1ad with vlan 0)", vf, pf)
	}
	return f.setVF(pf, vf, func(s *netops.VFSettings) {
		s.VLAN, s.QoS, s.VLANProto = vlan, qos, proto
		if proto == 0 {
			s.VLANProto = netops.VLANProto8021Q
		}
	}, "SetVFVLAN(%s, %d, %d, %d, %#x)", pf, vf, vlan, qos, proto)
}

// SetVFGUID implements netops.Ops.
func (f *Fake) SetVFGUID(_ context.Context, pf string, vf int, guid net.HardwareAddr) error {
	if len(guid) != 8 {
		return fmt.Errorf("GUID %s of VF %d: want 8 bytes", guid, vf)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record(true, "SetVFGUID(%s, %d, %s)", pf, vf, guid); err != nil {
		return err
	}
	if _, err := f.vf(pf, vf); err != nil {
		return err
	}
	if f.guids[pf] == nil {
		f.guids[pf] = map[int]string{}
	}
	f.guids[pf][vf] = guid.String()
	return nil
}

// VFGUIDOf returns the GUID last set on a VF through its PF ("" if none).
func (f *Fake) VFGUIDOf(pf string, vf int) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.guids[pf][vf]
}

// SetVFSpoofChk implements netops.Ops.
func (f *Fake) SetVFSpoofChk(_ context.Context, pf string, vf int, on bool) error {
	return f.setVF(pf, vf, func(s *netops.VFSettings) { s.SpoofChk = on },
		"SetVFSpoofChk(%s, %d, %v)", pf, vf, on)
}

// SetVFTrust implements netops.Ops.
func (f *Fake) SetVFTrust(_ context.Context, pf string, vf int, on bool) error {
	return f.setVF(pf, vf, func(s *netops.VFSettings) { s.Trust = on },
		"SetVFTrust(%s, %d, %v)", pf, vf, on)
}

// SetVFLinkState implements netops.Ops.
func (f *Fake) SetVFLinkState(_ context.Context, pf string, vf int, state uint32) error {
	return f.setVF(pf, vf, func(s *netops.VFSettings) { s.LinkState = state },
		"SetVFLinkState(%s, %d, %d)", pf, vf, state)
}

// SetVFRate implements netops.Ops.
func (f *Fake) SetVFRate(_ context.Context, pf string, vf, minRate, maxRate int) error {
	return f.setVF(pf, vf, func(s *netops.VFSettings) { s.MinTxRate, s.MaxTxRate = minRate, maxRate },
		"SetVFRate(%s, %d, %d, %d)", pf, vf, minRate, maxRate)
}

// RDMANetnsMode implements netops.Ops.
func (f *Fake) RDMANetnsMode(_ context.Context) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	_ = f.record(false, "RDMANetnsMode()")
	return f.rdmaMode, nil
}

// RDMADeviceIn implements netops.Ops.
func (f *Fake) RDMADeviceIn(_ context.Context, path, dev string) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	_ = f.record(false, "RDMADeviceIn(%q, %s)", path, dev)
	where, ok := f.rdma[dev]
	return ok && where == path, nil
}

// MoveRDMA implements netops.Ops.
func (f *Fake) MoveRDMA(_ context.Context, from, dev, to string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record(true, "MoveRDMA(%q, %s, %q)", from, dev, to); err != nil {
		return err
	}
	where, ok := f.rdma[dev]
	if !ok || where != from {
		return fmt.Errorf("%s in %q: %w", dev, from, netops.ErrRDMANotFound)
	}
	if _, err := f.nsLinks(to); err != nil {
		return err
	}
	if f.rdmaMode != "exclusive" {
		return fmt.Errorf("moving RDMA device in %s mode: %w", f.rdmaMode, syscall.EOPNOTSUPP)
	}
	f.rdma[dev] = to
	return nil
}
