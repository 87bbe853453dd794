package netopstest

import (
	"context"
	"fmt"
	"io/fs"
	pathpkg "path"
	"slices"
	"strings"
	"syscall"

	"github.com/railyard-io/railyard/internal/netops"
)

// SetSysfs makes WithSysfs of namespace path show the tree at root (a
// generated fake sysfs): the RDMA devices in that namespace.
func (f *Fake) SetSysfs(path, root string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.sysfs == nil {
		f.sysfs = map[string]string{}
	}
	f.sysfs[path] = root
}

// WithSysfs implements netops.Ops: the tree SetSysfs gave the namespace,
// else netops.ErrNoSysfs.
func (f *Fake) WithSysfs(_ context.Context, path string, fn func(root string) error) error {
	f.mu.Lock()
	_ = f.record(false, "WithSysfs(%q)", path)
	root, ok := f.sysfs[path]
	_, exists := f.ns[path]
	f.mu.Unlock()
	switch {
	case !exists:
		return fmt.Errorf("%s: %w", path, netops.ErrNetnsNotFound)
	case !ok:
		return fmt.Errorf("%s: %w", path, netops.ErrNoSysfs)
	}
	return fn(root)
}

// ifaceKnob splits "net/ipv4/conf/<if>/<knob>" into the interface and
// "ipv4/<knob>"; ok is false for another sysctl (or conf/all, default).
func ifaceKnob(name string) (iface, knob string, ok bool) {
	p := strings.Split(name, "/")
	if len(p) != 5 || p[0] != "net" || p[2] != "conf" || p[3] == "all" || p[3] == "default" {
		return "", "", false
	}
	return p[3], p[1] + "/" + p[4], true
}

// sysctl finds where a sysctl lives; f.mu must be held. An interface's
// is on its link (gone with it), any other on the namespace.
func (f *Fake) sysctl(path, name string) (m map[string]string, key string, set func(map[string]string), err error) {
	if !strings.HasPrefix(name, "net/") || pathpkg.Clean(name) != name {
		return nil, "", nil, fmt.Errorf("sysctl %q: %w", name, syscall.EINVAL)
	}
	if _, err := f.nsLinks(path); err != nil {
		return nil, "", nil, err
	}
	if iface, knob, ok := ifaceKnob(name); ok {
		l := f.lookup(path, iface)
		if l == nil {
			return nil, "", nil, fmt.Errorf("sysctl %s in %q: %w", name, path, fs.ErrNotExist)
		}
		return l.sysctls, knob, func(m map[string]string) { l.sysctls = m }, nil
	}
	if f.nsSysctls == nil {
		f.nsSysctls = map[string]map[string]string{}
	}
	return f.nsSysctls[path], name, func(m map[string]string) { f.nsSysctls[path] = m }, nil
}

// Sysctl implements netops.Ops; a sysctl never set reads "0", the
// kernel's default of the knobs railyard-cni sets.
func (f *Fake) Sysctl(_ context.Context, path, name string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	_ = f.record(false, "Sysctl(%q, %s)", path, name)
	m, key, _, err := f.sysctl(path, name)
	if err != nil {
		return "", err
	}
	if v, ok := m[key]; ok {
		return v, nil
	}
	return "0", nil
}

// SetSysctl implements netops.Ops.
func (f *Fake) SetSysctl(_ context.Context, path, name, value string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record(true, "SetSysctl(%q, %s, %s)", path, name, value); err != nil {
		return err
	}
	m, key, set, err := f.sysctl(path, name)
	if err != nil {
		return err
	}
	if m == nil {
		m = map[string]string{}
	}
	m[key] = value
	set(m)
	return nil
}

// AddRoute implements netops.Ops: the route lives on its link, and a
// route of the same table and destination is EEXIST.
func (f *Fake) AddRoute(_ context.Context, path string, r netops.Route) error {
	return f.mutate(path, r.Link, func(l *fakeLink) error {
		for _, o := range f.ns[path] {
			if slices.ContainsFunc(o.routes, func(x netops.Route) bool { return x.Table == r.Table && x.Dst.String() == r.Dst.String() }) {
				return fmt.Errorf("route %s: %w", r, syscall.EEXIST)
			}
		}
		r.Link = l.Name
		l.routes = append(l.routes, r)
		return nil
	}, "AddRoute(%q, %s)", path, r)
}

// Routes implements netops.Ops.
func (f *Fake) Routes(_ context.Context, path string, table int) ([]netops.Route, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	_ = f.record(false, "Routes(%q, %d)", path, table)
	links, err := f.nsLinks(path)
	if err != nil {
		return nil, err
	}
	var out []netops.Route
	for _, name := range sortedKeys(links) {
		l := links[name]
		for _, r := range l.routes {
			if r.Table == table {
				r.Link = l.Name
				out = append(out, r)
			}
		}
	}
	return out, nil
}

// AddRule implements netops.Ops.
func (f *Fake) AddRule(_ context.Context, path string, r netops.Rule) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record(true, "AddRule(%q, %s)", path, r); err != nil {
		return err
	}
	if _, err := f.nsLinks(path); err != nil {
		return err
	}
	if slices.ContainsFunc(f.rules[path], func(o netops.Rule) bool { return netops.SameRule(o, r) }) {
		return fmt.Errorf("rule %s: %w", r, syscall.EEXIST)
	}
	if f.rules == nil {
		f.rules = map[string][]netops.Rule{}
	}
	f.rules[path] = append(f.rules[path], r)
	return nil
}

// DelRule implements netops.Ops.
func (f *Fake) DelRule(_ context.Context, path string, r netops.Rule) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record(true, "DelRule(%q, %s)", path, r); err != nil {
		return err
	}
	if _, err := f.nsLinks(path); err != nil {
		return err
	}
	i := slices.IndexFunc(f.rules[path], func(o netops.Rule) bool { return netops.SameRule(o, r) })
	if i < 0 {
		return fmt.Errorf("rule %s: %w", r, syscall.ENOENT)
	}
	f.rules[path] = slices.Delete(f.rules[path], i, i+1)
	return nil
}

// Rules implements netops.Ops: IPv4 rules, then IPv6, each by priority.
func (f *Fake) Rules(_ context.Context, path string) ([]netops.Rule, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	_ = f.record(false, "Rules(%q)", path)
	if _, err := f.nsLinks(path); err != nil {
		return nil, err
	}
	out := slices.Clone(f.rules[path])
	slices.SortStableFunc(out, func(a, b netops.Rule) int {
		v4 := func(r netops.Rule) int {
			if r.Src != nil && r.Src.IP.To4() == nil {
				return 1
			}
			return 0
		}
		if d := v4(a) - v4(b); d != 0 {
			return d
		}
		return a.Priority - b.Priority
	})
	return out, nil
}

func sortedKeys(m map[string]*fakeLink) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
