//go:build linux

package netops_test

import (
	"errors"
	"syscall"
	"testing"

	"github.com/railyard-io/railyard/internal/netops"
	"github.com/railyard-io/railyard/internal/netops/netnstest"
	"github.com/railyard-io/railyard/internal/netops/netopstest"
)

// world is what a contract case runs against: the real kernel or the fake.
type world struct {
	o netops.Ops
	// netns makes a new network namespace and returns its path.
	netns func() string
	// veth makes a virtual link called name on the host (its peer, if any,
	// elsewhere) with MTU 1500, and returns its name.
	veth func(name string) string
	// dropNetns deletes a namespace the way `ip netns delete` does.
	dropNetns func(path string)
}

func realWorld(t *testing.T) world {
	netnstest.Require(t)
	peer := netnstest.NewNetns(t, "cpeer")
	return world{
		o:     &netops.Linux{},
		netns: func() string { return netnstest.NewNetns(t, "cpod") },
		veth: func(name string) string {
			netnstest.NewVeth(t, name, peer)
			return name
		},
		dropNetns: func(path string) { netnstest.IP(t, "netns", "delete", baseName(path)) },
	}
}

func fakeWorld(t *testing.T) world {
	f := netopstest.New()
	n := 0
	return world{
		o: f,
		netns: func() string {
			n++
			p := "/var/run/netns/fake" + string(rune('a'+n))
			f.AddNetns(p)
			return p
		},
		veth: func(name string) string {
			f.AddLink(netops.Host, netops.Link{Name: name, MTU: 1500}, true)
			return name
		},
		dropNetns: f.DeleteNetns,
	}
}

func baseName(p string) string {
	for i := len(p) - 1; i >= 0; i-- {
		if p[i] == '/' {
			return p[i+1:]
		}
	}
	return p
}

// contractCases is one table of kernel behaviour railyard-cni relies on;
// TestContract runs it against the kernel and against netopstest.Fake, so
// the fake cannot drift from the kernel unnoticed. (VF operations need
// SR-IOV hardware: their table, TestVFContract, runs on the VM's igb.)
var contractCases = []struct {
	name string
	run  func(t *testing.T, w world)
}{
	{"a missing link is ErrLinkNotFound, for every operation", func(t *testing.T, w world) {
		missing := netnstest.Name("nx")
		for what, err := range map[string]error{
			"Link":        func() error { _, err := w.o.Link(ctx, netops.Host, missing); return err }(),
			"LinkByAlias": func() error { _, err := w.o.LinkByAlias(ctx, netops.Host, "no such alias railyard"); return err }(),
			"SetMTU":      w.o.SetMTU(ctx, netops.Host, missing, 1400),
			"RenameLink":  w.o.RenameLink(ctx, netops.Host, missing, netnstest.Name("r")),
			"DeleteLink":  w.o.DeleteLink(ctx, netops.Host, missing),
		} {
			if !errors.Is(err, netops.ErrLinkNotFound) {
				t.Errorf("%s on a missing link: %v, want ErrLinkNotFound", what, err)
			}
		}
	}},
	{"rename onto a name or an altname in use is EEXIST", func(t *testing.T, w world) {
		a, b := w.veth(netnstest.Name("ca")), w.veth(netnstest.Name("cb"))
		if err := w.o.RenameLink(ctx, netops.Host, a, b); !errors.Is(err, syscall.EEXIST) {
			t.Errorf("rename onto a name: %v", err)
		}
		alt := netnstest.Name("alt")
		must(t, w.o.AddAltName(ctx, netops.Host, b, alt))
		if err := w.o.RenameLink(ctx, netops.Host, a, alt); !errors.Is(err, syscall.EEXIST) {
			t.Errorf("rename onto an altname: %v", err)
		}
		if l, err := w.o.Link(ctx, netops.Host, alt); err != nil || l.Name != b {
			t.Errorf("lookup by altname: %+v, %v", l, err)
		}
	}},
	{"a move keeps the name, takes the link down, and refuses a name collision", func(t *testing.T, w world) {
		pod := w.netns()
		a := w.veth(netnstest.Name("cm"))
		must(t, w.o.SetLinkUp(ctx, netops.Host, a, true))
		must(t, w.o.MoveLink(ctx, netops.Host, a, pod))
		l, err := w.o.Link(ctx, pod, a)
		if err != nil || l.Up {
			t.Errorf("moved link %+v, %v: want it there and down", l, err)
		}
		if _, err := w.o.Link(ctx, netops.Host, a); !errors.Is(err, netops.ErrLinkNotFound) {
			t.Errorf("moved link still on the host: %v", err)
		}
		same := w.veth(a) // a new link with the same name on the host
		if err := w.o.MoveLink(ctx, netops.Host, same, pod); !errors.Is(err, syscall.EEXIST) {
			t.Errorf("move onto a name in use: %v", err)
		}
		if err := w.o.MoveLink(ctx, netops.Host, same, "/var/run/netns/railyard-none"); !errors.Is(err, netops.ErrNetnsNotFound) {
			t.Errorf("move to a missing namespace: %v", err)
		}
	}},
	{"MTU outside the device's range is EINVAL and changes nothing", func(t *testing.T, w world) {
		a := w.veth(netnstest.Name("cu"))
		for _, mtu := range []int{67, 65536} {
			if err := w.o.SetMTU(ctx, netops.Host, a, mtu); !errors.Is(err, syscall.EINVAL) {
				t.Errorf("MTU %d: %v, want EINVAL", mtu, err)
			}
		}
		if l, _ := w.o.Link(ctx, netops.Host, a); l.MTU != 1500 {
			t.Errorf("MTU after refused changes: %d", l.MTU)
		}
	}},
	{"a macvlan takes its parent's MTU, never a larger one, and dies with its namespace", func(t *testing.T, w world) {
		parent := w.veth(netnstest.Name("cp"))
		must(t, w.o.SetMTU(ctx, netops.Host, parent, 1400))
		mv := netnstest.Name("mv")
		if err := w.o.AddMacvlan(ctx, parent, mv, "nosuchmode"); err == nil {
			t.Error("macvlan with an unknown mode accepted")
		}
		must(t, w.o.AddMacvlan(ctx, parent, mv, "bridge"))
		l, err := w.o.Link(ctx, netops.Host, mv)
		if err != nil || l.MTU != 1400 || len(l.MAC) != 6 {
			t.Fatalf("macvlan %+v, %v: want MTU 1400 and a MAC", l, err)
		}
		if err := w.o.SetMTU(ctx, netops.Host, mv, 1500); !errors.Is(err, syscall.EINVAL) {
			t.Errorf("macvlan MTU above its parent's: %v, want EINVAL", err)
		}
		pod := w.netns()
		must(t, w.o.MoveLink(ctx, netops.Host, mv, pod))
		w.dropNetns(pod)
		if _, err := w.o.Link(ctx, netops.Host, mv); !errors.Is(err, netops.ErrLinkNotFound) {
			t.Errorf("macvlan came back from a deleted namespace: %v", err)
		}
		if l, err := w.o.Link(ctx, netops.Host, parent); err != nil || l.MTU != 1400 {
			t.Errorf("parent after its macvlan's namespace went: %+v, %v", l, err)
		}
	}},
	{"DeleteLink removes a virtual link", func(t *testing.T, w world) {
		a := w.veth(netnstest.Name("cd"))
		must(t, w.o.DeleteLink(ctx, netops.Host, a))
		if _, err := w.o.Link(ctx, netops.Host, a); !errors.Is(err, netops.ErrLinkNotFound) {
			t.Errorf("after DeleteLink: %v", err)
		}
	}},
	{"namespaces are compared by identity", func(t *testing.T, w world) {
		pod := w.netns()
		if same, err := w.o.SameNetns(ctx, pod, pod); err != nil || !same {
			t.Errorf("SameNetns(pod, pod) = %v, %v", same, err)
		}
		if same, err := w.o.SameNetns(ctx, pod, netops.Host); err != nil || same {
			t.Errorf("SameNetns(pod, host) = %v, %v", same, err)
		}
	}},
}

func TestContract(t *testing.T) {
	for _, impl := range []struct {
		name  string
		world func(t *testing.T) world
	}{{"Kernel", realWorld}, {"Fake", fakeWorld}} {
		for _, c := range contractCases {
			t.Run(impl.name+"/"+c.name, func(t *testing.T) { c.run(t, impl.world(t)) })
		}
	}
}
