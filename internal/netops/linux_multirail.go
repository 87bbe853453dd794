//go:build linux

package netops

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/containernetworking/plugins/pkg/netlinksafe"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// procSys is where sysctls are; /proc/sys/net shows the namespace of the
// thread that opens it.
const procSys = "/proc/sys"

// Sysctl implements Ops.
func (lx Linux) Sysctl(_ context.Context, path, name string) (string, error) {
	if err := checkSysctl(name); err != nil {
		return "", err
	}
	var out string
	err := inNS(path, func() error {
		b, err := os.ReadFile(filepath.Join(procSys, name))
		if err != nil {
			return fmt.Errorf("sysctl %s in %s: %w", name, nsLabel(path), err)
		}
		out = strings.TrimSpace(string(b))
		return nil
	})
	return out, err
}

// SetSysctl implements Ops.
func (lx Linux) SetSysctl(_ context.Context, path, name, value string) error {
	if err := checkSysctl(name); err != nil {
		return err
	}
	return inNS(path, func() error {
		// O_WRONLY without O_CREATE: a sysctl that does not exist (an
		// interface that is gone) is an error, never a new file.
		f, err := os.OpenFile(filepath.Join(procSys, name), os.O_WRONLY|os.O_TRUNC, 0)
		if err != nil {
			return fmt.Errorf("sysctl %s in %s: %w", name, nsLabel(path), err)
		}
		_, werr := f.WriteString(value)
		if cerr := f.Close(); werr == nil {
			werr = cerr
		}
		if werr != nil {
			return fmt.Errorf("setting sysctl %s to %q in %s: %w", name, value, nsLabel(path), werr)
		}
		return nil
	})
}

// AddRoute implements Ops.
func (lx Linux) AddRoute(_ context.Context, path string, r Route) error {
	return lx.withLink(path, r.Link, func(h netlinksafe.Handle, l netlink.Link) error {
		nr := &netlink.Route{LinkIndex: l.Attrs().Index, Dst: r.Dst, Gw: r.GW, Table: r.Table}
		if r.GW == nil {
			nr.Scope = netlink.SCOPE_LINK
		}
		if err := h.RouteAdd(nr); err != nil {
			return fmt.Errorf("adding route %s in %s: %w", r, nsLabel(path), err)
		}
		return nil
	})
}

// Routes implements Ops.
func (lx Linux) Routes(_ context.Context, path string, table int) ([]Route, error) {
	h, done, err := lx.handle(path)
	if err != nil {
		return nil, err
	}
	defer done()
	rs, err := h.RouteListFiltered(netlink.FAMILY_ALL, &netlink.Route{Table: table}, netlink.RT_FILTER_TABLE)
	if err != nil {
		return nil, fmt.Errorf("listing routes of table %d in %s: %w", table, nsLabel(path), err)
	}
	var out []Route
	for _, r := range rs {
		if r.Table != table {
			continue
		}
		o := Route{Table: r.Table, Dst: r.Dst, GW: r.Gw}
		if o.Dst != nil {
			if ones, _ := o.Dst.Mask.Size(); ones == 0 && o.Dst.IP.IsUnspecified() {
				o.Dst = nil // the default route, as some kernels spell it
			}
		}
		if l, err := h.LinkByIndex(r.LinkIndex); err == nil {
			o.Link = l.Attrs().Name
		}
		out = append(out, o)
	}
	return out, nil
}

func ruleFamily(src *net.IPNet) int {
	if src != nil && src.IP.To4() == nil {
		return netlink.FAMILY_V6
	}
	return netlink.FAMILY_V4
}

func toNetlinkRule(r Rule) *netlink.Rule {
	nr := netlink.NewRule()
	nr.Priority, nr.Src, nr.Table, nr.Family = r.Priority, r.Src, r.Table, ruleFamily(r.Src)
	return nr
}

// AddRule implements Ops.
func (lx Linux) AddRule(_ context.Context, path string, r Rule) error {
	h, done, err := lx.handle(path)
	if err != nil {
		return err
	}
	defer done()
	if err := h.RuleAdd(toNetlinkRule(r)); err != nil {
		return fmt.Errorf("adding rule %s in %s: %w", r, nsLabel(path), err)
	}
	return nil
}

// DelRule implements Ops.
func (lx Linux) DelRule(_ context.Context, path string, r Rule) error {
	h, done, err := lx.handle(path)
	if err != nil {
		return err
	}
	defer done()
	if err := h.RuleDel(toNetlinkRule(r)); err != nil {
		return fmt.Errorf("deleting rule %s in %s: %w", r, nsLabel(path), err)
	}
	return nil
}

// Rules implements Ops. Without IPv6 in the kernel it lists the IPv4
// rules: a DEL must not fail on a family the node lacks.
func (lx Linux) Rules(_ context.Context, path string) ([]Rule, error) {
	h, done, err := lx.handle(path)
	if err != nil {
		return nil, err
	}
	defer done()
	var out []Rule
	for _, fam := range []int{netlink.FAMILY_V4, netlink.FAMILY_V6} {
		var rs []netlink.Rule
		for range 5 { // a dump interrupted by a change is retried
			if rs, err = h.RuleList(fam); !errors.Is(err, netlink.ErrDumpInterrupted) {
				break
			}
		}
		if fam == netlink.FAMILY_V6 && errors.Is(err, unix.EAFNOSUPPORT) {
			break // a kernel booted with ipv6.disable=1 has no IPv6 rules
		}
		if err != nil {
			return nil, fmt.Errorf("listing rules in %s: %w", nsLabel(path), err)
		}
		for _, r := range rs {
			if r.Table == TableLocal || r.Table == TableMain || r.Table == TableDefault {
				continue
			}
			out = append(out, Rule{Priority: r.Priority, Src: r.Src, Table: r.Table})
		}
	}
	return out, nil
}

// WithSysfs implements Ops: on a thread of its own, in a mount namespace
// of its own (slave to the host's, so nothing propagates back), it joins
// namespace path and mounts a sysfs there, read-only, on a temporary
// directory: a sysfs shows the network namespace of the process that
// mounted it. The thread is never unlocked, so it ends with the
// goroutine, its namespaces and mount with it.
func (lx Linux) WithSysfs(_ context.Context, path string, f func(root string) error) error {
	dir, err := os.MkdirTemp("", "railyard-sysfs-")
	if err != nil {
		return fmt.Errorf("sysfs of %s: %w", nsLabel(path), err)
	}
	defer os.Remove(dir)
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		errc <- sysfsOnThisThread(path, dir, f)
	}()
	return <-errc
}

func sysfsOnThisThread(path, dir string, f func(root string) error) error {
	target, err := nsHandle(path)
	if err != nil {
		return err
	}
	defer target.Close()
	if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
		return fmt.Errorf("sysfs of %s: a mount namespace: %w", nsLabel(path), err)
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_SLAVE, ""); err != nil {
		return fmt.Errorf("sysfs of %s: making mounts private: %w", nsLabel(path), err)
	}
	if err := netns.Set(target); err != nil {
		return fmt.Errorf("sysfs of %s: joining the namespace: %w", nsLabel(path), err)
	}
	if err := unix.Mount("sysfs", dir, "sysfs", unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("sysfs of %s: mounting: %w", nsLabel(path), err)
	}
	defer unix.Unmount(dir, unix.MNT_DETACH)
	return f(dir)
}
