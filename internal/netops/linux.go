//go:build linux

package netops

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"sync"

	"github.com/containernetworking/cni/pkg/types"
	current "github.com/containernetworking/cni/pkg/types/100"
	"github.com/containernetworking/plugins/pkg/ip"
	"github.com/containernetworking/plugins/pkg/ipam"
	"github.com/containernetworking/plugins/pkg/netlinksafe"
	"github.com/containernetworking/plugins/pkg/ns"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// Linux performs the operations for real over rtnetlink and the RDMA
// netlink family. The zero value is ready to use and opens a netlink handle
// per call; NewOperation returns one that keeps them for an operation.
type Linux struct {
	conns *conns
}

// conns are the netlink handles an operation keeps, per namespace and
// family, with the namespace handles they were opened in.
type conns struct {
	mu      sync.Mutex
	handles map[connKey]netlinksafe.Handle
	nss     []netns.NsHandle
}

type connKey struct {
	path   string
	family int
}

// NewOperation returns a Linux for one multi-step operation (a CNI ADD,
// DEL, CHECK or GC): each namespace's netlink handle is opened at its first
// use and kept until Close, rather than opened and closed by every call.
// Not for long-lived use: a kept handle keeps its namespace alive and would
// not see another namespace mounted later at the same path.
func NewOperation() Linux {
	return Linux{conns: &conns{handles: map[connKey]netlinksafe.Handle{}}}
}

// Close releases the handles an operation kept. The zero Linux keeps none.
func (lx Linux) Close() {
	if lx.conns == nil {
		return
	}
	c := lx.conns
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, h := range c.handles {
		h.Close()
		delete(c.handles, k)
	}
	for _, n := range c.nss {
		n.Close()
	}
	c.nss = nil
}

var _ Ops = (*Linux)(nil)

// nsHandle opens the namespace at path ("" = the calling thread's own).
func nsHandle(path string) (netns.NsHandle, error) {
	if path == Host {
		h, err := netns.Get()
		if err != nil {
			return netns.None(), fmt.Errorf("opening own network namespace: %w", err)
		}
		return h, nil
	}
	if _, err := os.Stat(path); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return netns.None(), fmt.Errorf("%s: %w", path, ErrNetnsNotFound)
		}
		return netns.None(), fmt.Errorf("network namespace %s: %w", path, err)
	}
	h, err := netns.GetFromPath(path)
	if err != nil {
		return netns.None(), fmt.Errorf("opening network namespace %s: %w", path, err)
	}
	return h, nil
}

// handle returns a netlink handle whose sockets live in namespace path,
// for the route family only. Opening every family (netlink's default) makes
// the kernel load the IPsec and netfilter netlink modules on every call, and
// fails with "protocol not supported" where they cannot be loaded.
func (lx Linux) handle(path string) (netlinksafe.Handle, func(), error) {
	return lx.handleFor(path, unix.NETLINK_ROUTE)
}

// handleFor is handle for one netlink family. The returned function
// releases the handle (nothing, when the operation keeps it).
func (lx Linux) handleFor(path string, family int) (netlinksafe.Handle, func(), error) {
	if lx.conns == nil {
		return openHandle(path, family)
	}
	c := lx.conns
	c.mu.Lock()
	defer c.mu.Unlock()
	key := connKey{path, family}
	if h, ok := c.handles[key]; ok {
		return h, func() {}, nil
	}
	h, nsh, err := openHandleIn(path, family)
	if err != nil {
		return netlinksafe.Handle{}, nil, err
	}
	c.handles[key] = h
	if nsh.IsOpen() {
		c.nss = append(c.nss, nsh)
	}
	return h, func() {}, nil
}

// openHandle opens a netlink handle for family in namespace path, and a
// function that closes it.
func openHandle(path string, family int) (netlinksafe.Handle, func(), error) {
	h, nsh, err := openHandleIn(path, family)
	if err != nil {
		return netlinksafe.Handle{}, nil, err
	}
	return h, func() {
		h.Close()
		if nsh.IsOpen() {
			nsh.Close()
		}
	}, nil
}

// openHandleIn opens a netlink handle for family in namespace path; the
// namespace handle it was opened through (none for the host) is the
// caller's to close.
func openHandleIn(path string, family int) (netlinksafe.Handle, netns.NsHandle, error) {
	families := []int{family}
	if path == Host {
		h, err := netlinksafe.NewHandle(families...)
		if err != nil {
			return netlinksafe.Handle{}, netns.None(), fmt.Errorf("netlink handle: %w", err)
		}
		return h, netns.None(), nil
	}
	nsh, err := nsHandle(path)
	if err != nil {
		return netlinksafe.Handle{}, netns.None(), err
	}
	h, err := netlinksafe.NewHandleAt(nsh, families...)
	if err != nil {
		nsh.Close()
		return netlinksafe.Handle{}, netns.None(), fmt.Errorf("netlink handle in %s: %w", path, err)
	}
	return h, nsh, nil
}

func nsLabel(path string) string {
	if path == Host {
		return "host namespace"
	}
	return path
}

// withLink runs f on link name in namespace path.
func (lx Linux) withLink(path, name string, f func(h netlinksafe.Handle, l netlink.Link) error) error {
	h, done, err := lx.handle(path)
	if err != nil {
		return err
	}
	defer done()
	l, err := h.LinkByName(name)
	if err != nil {
		return linkErr(path, name, err)
	}
	return f(h, l)
}

func linkErr(path, name string, err error) error {
	var nf netlink.LinkNotFoundError
	if errors.As(err, &nf) || errors.Is(err, errNoDevice) {
		return fmt.Errorf("%s in %s: %w", name, nsLabel(path), ErrLinkNotFound)
	}
	return fmt.Errorf("looking up %s in %s: %w", name, nsLabel(path), err)
}

var errNoDevice = errors.New("no such device")

func snapshot(l netlink.Link) Link {
	a := l.Attrs()
	return Link{
		Name:     a.Name,
		Index:    a.Index,
		MTU:      a.MTU,
		MAC:      slices.Clone(a.HardwareAddr),
		Up:       a.Flags&net.FlagUp != 0,
		Alias:    a.Alias,
		AltNames: slices.Clone(a.AltNames),
	}
}

// NetnsExists implements Ops.
func (lx Linux) NetnsExists(_ context.Context, path string) (bool, error) {
	if path == Host {
		return true, nil
	}
	err := ns.IsNSorErr(path)
	if err == nil {
		return true, nil
	}
	var notExist ns.NSPathNotExistErr
	if errors.As(err, &notExist) {
		return false, nil
	}
	var notNS ns.NSPathNotNSErr
	if errors.As(err, &notNS) {
		// A bind mount left behind after the namespace was torn down.
		return false, nil
	}
	return false, fmt.Errorf("checking network namespace %s: %w", path, err)
}

// SameNetns implements Ops: two namespace files are the same namespace when
// they have the same device and inode. Host is the calling thread's own.
func (lx Linux) SameNetns(_ context.Context, a, b string) (bool, error) {
	id := func(path string) (uint64, uint64, error) {
		if path == Host {
			path = "/proc/thread-self/ns/net"
		}
		var st unix.Stat_t
		if err := unix.Stat(path, &st); err != nil {
			return 0, 0, fmt.Errorf("network namespace %s: %w", path, err)
		}
		return st.Dev, st.Ino, nil
	}
	da, ia, err := id(a)
	if err != nil {
		return false, err
	}
	db, ib, err := id(b)
	if err != nil {
		return false, err
	}
	return da == db && ia == ib, nil
}

// Link implements Ops.
func (lx Linux) Link(_ context.Context, path, name string) (Link, error) {
	var out Link
	err := lx.withLink(path, name, func(_ netlinksafe.Handle, l netlink.Link) error {
		out = snapshot(l)
		return nil
	})
	return out, err
}

// LinkByAlias implements Ops.
func (lx Linux) LinkByAlias(_ context.Context, path, alias string) (Link, error) {
	h, done, err := lx.handle(path)
	if err != nil {
		return Link{}, err
	}
	defer done()
	links, err := h.LinkList()
	if err != nil {
		return Link{}, fmt.Errorf("listing links in %s: %w", nsLabel(path), err)
	}
	for _, l := range links {
		if l.Attrs().Alias == alias {
			return snapshot(l), nil
		}
	}
	return Link{}, fmt.Errorf("alias %q in %s: %w", alias, nsLabel(path), ErrLinkNotFound)
}

// SetLinkUp implements Ops.
func (lx Linux) SetLinkUp(_ context.Context, path, name string, up bool) error {
	return lx.withLink(path, name, func(h netlinksafe.Handle, l netlink.Link) error {
		if up {
			return wrap("setting %s up", name, h.LinkSetUp(l))
		}
		return wrap("setting %s down", name, h.LinkSetDown(l))
	})
}

// RenameLink implements Ops.
func (lx Linux) RenameLink(_ context.Context, path, name, newName string) error {
	return lx.withLink(path, name, func(h netlinksafe.Handle, l netlink.Link) error {
		if err := h.LinkSetName(l, newName); err != nil {
			return fmt.Errorf("renaming %s to %s in %s: %w", name, newName, nsLabel(path), err)
		}
		return nil
	})
}

// SetMTU implements Ops.
func (lx Linux) SetMTU(_ context.Context, path, name string, mtu int) error {
	return lx.withLink(path, name, func(h netlinksafe.Handle, l netlink.Link) error {
		return wrap("setting MTU of %s", name, h.LinkSetMTU(l, mtu))
	})
}

// SetMAC implements Ops.
func (lx Linux) SetMAC(_ context.Context, path, name string, mac net.HardwareAddr) error {
	return lx.withLink(path, name, func(h netlinksafe.Handle, l netlink.Link) error {
		return wrap("setting MAC of %s", name, h.LinkSetHardwareAddr(l, mac))
	})
}

// SetAlias implements Ops.
func (lx Linux) SetAlias(_ context.Context, path, name, alias string) error {
	return lx.withLink(path, name, func(h netlinksafe.Handle, l netlink.Link) error {
		return wrap("setting alias of %s", name, h.LinkSetAlias(l, alias))
	})
}

// AddAltName implements Ops.
func (lx Linux) AddAltName(_ context.Context, path, name, alt string) error {
	return lx.withLink(path, name, func(h netlinksafe.Handle, l netlink.Link) error {
		return wrap("adding altname "+alt+" to %s", name, h.LinkAddAltName(l, alt))
	})
}

// DelAltName implements Ops.
func (lx Linux) DelAltName(_ context.Context, path, name, alt string) error {
	return lx.withLink(path, name, func(h netlinksafe.Handle, l netlink.Link) error {
		return wrap("deleting altname "+alt+" of %s", name, h.LinkDelAltName(l, alt))
	})
}

// MoveLink implements Ops.
func (lx Linux) MoveLink(_ context.Context, from, name, to string) error {
	target, err := nsHandle(to)
	if err != nil {
		return err
	}
	defer target.Close()
	return lx.withLink(from, name, func(h netlinksafe.Handle, l netlink.Link) error {
		if err := h.LinkSetNsFd(l, int(target)); err != nil {
			return fmt.Errorf("moving %s from %s to %s: %w", name, nsLabel(from), nsLabel(to), err)
		}
		return nil
	})
}

// AddMacvlan implements Ops.
func (lx Linux) AddMacvlan(_ context.Context, parent, name, mode string) error {
	modes := map[string]netlink.MacvlanMode{
		"bridge": netlink.MACVLAN_MODE_BRIDGE, "private": netlink.MACVLAN_MODE_PRIVATE,
		"vepa": netlink.MACVLAN_MODE_VEPA, "passthru": netlink.MACVLAN_MODE_PASSTHRU,
	}
	m, ok := modes[mode]
	if !ok {
		return fmt.Errorf("macvlan mode %q is not one of %v", mode, MacvlanModes)
	}
	return lx.withLink(Host, parent, func(h netlinksafe.Handle, l netlink.Link) error {
		mv := &netlink.Macvlan{LinkAttrs: netlink.LinkAttrs{Name: name, ParentIndex: l.Attrs().Index}, Mode: m}
		if err := h.LinkAdd(mv); err != nil {
			return fmt.Errorf("creating macvlan %s on %s: %w", name, parent, err)
		}
		return nil
	})
}

// DeleteLink implements Ops.
func (lx Linux) DeleteLink(_ context.Context, path, name string) error {
	return lx.withLink(path, name, func(h netlinksafe.Handle, l netlink.Link) error {
		if err := h.LinkDel(l); err != nil {
			return fmt.Errorf("deleting %s in %s: %w", name, nsLabel(path), err)
		}
		return nil
	})
}

// inNS runs f with the calling goroutine's thread in namespace path.
func inNS(path string, f func() error) error {
	if path == Host {
		return f()
	}
	n, err := ns.GetNS(path)
	if err != nil {
		return fmt.Errorf("opening network namespace %s: %w", path, err)
	}
	defer n.Close()
	return n.Do(func(ns.NetNS) error { return f() })
}

// ConfigureIPs implements Ops.
func (lx Linux) ConfigureIPs(_ context.Context, path, name string, res *current.Result) error {
	return inNS(path, func() error {
		return wrap("configuring addresses of %s", name, ipam.ConfigureIface(name, res))
	})
}

// CheckIPs implements Ops.
func (lx Linux) CheckIPs(_ context.Context, path, name string, ips []*current.IPConfig, routes []*types.Route) error {
	return inNS(path, func() error {
		if err := ip.ValidateExpectedInterfaceIPs(name, ips); err != nil {
			return err
		}
		return ip.ValidateExpectedRoute(routes)
	})
}

func wrap(format, name string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf(format+": %w", name, err)
}
