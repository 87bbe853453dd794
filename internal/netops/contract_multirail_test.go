//go:build linux

package netops_test

import (
	"errors"
	"io/fs"
	"net"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/railyard-io/railyard/internal/netops"
	"github.com/railyard-io/railyard/internal/netops/netnstest"
)

func cidr(t *testing.T, s string) *net.IPNet {
	t.Helper()
	ip, n, err := net.ParseCIDR(s)
	if err != nil {
		t.Fatal(err)
	}
	n.IP = ip
	return n
}

// multiRailContract is the kernel behaviour railyard-cni's multi-rail
// routing relies on, run against the kernel and the fake: an
// interface's sysctls and the routes through it stay behind when it
// leaves a namespace (it gets the new namespace's defaults), a rule stays
// until deleted; a second identical route or rule is EEXIST, deleting a
// missing rule ENOENT.
func multiRailContract(t *testing.T, w world) {
	pod := w.netns()
	a := w.veth(netnstest.Name("cr"))
	must(t, w.o.MoveLink(ctx, netops.Host, a, pod))
	must(t, w.o.SetLinkUp(ctx, pod, a, true))
	key := netops.IfaceSysctl("ipv4", a, "arp_ignore")
	must(t, w.o.SetSysctl(ctx, pod, key, "1"))
	if v, err := w.o.Sysctl(ctx, pod, key); err != nil || v != "1" {
		t.Errorf("arp_ignore after setting it: %q, %v", v, err)
	}
	if err := w.o.SetSysctl(ctx, pod, "net/../../etc/passwd", "x"); err == nil {
		t.Error("a sysctl outside /proc/sys/net accepted")
	}
	subnet := cidr(t, "192.168.77.0/24")
	subnet.IP = subnet.IP.Mask(subnet.Mask)
	r := netops.Route{Table: 20001, Dst: subnet, Link: a}
	must(t, w.o.AddRoute(ctx, pod, r))
	if err := w.o.AddRoute(ctx, pod, r); !errors.Is(err, syscall.EEXIST) {
		t.Errorf("the same route again: %v, want EEXIST", err)
	}
	got, err := w.o.Routes(ctx, pod, 20001)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]netops.Route{r}, got); diff != "" {
		t.Errorf("Routes (-want +got):\n%s", diff)
	}
	r4 := netops.Rule{Priority: 20000, Src: cidr(t, "192.168.77.3/32"), Table: 20001}
	r6 := netops.Rule{Priority: 20000, Src: cidr(t, "fd00:77::3/128"), Table: 20001}
	must(t, w.o.AddRule(ctx, pod, r6))
	must(t, w.o.AddRule(ctx, pod, r4))
	if err := w.o.AddRule(ctx, pod, r4); !errors.Is(err, syscall.EEXIST) {
		t.Errorf("the same rule again: %v, want EEXIST", err)
	}
	rules, err := w.o.Rules(ctx, pod)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]netops.Rule{r4, r6}, rules); diff != "" {
		t.Errorf("Rules (-want +got):\n%s", diff)
	}

	must(t, w.o.SetLinkUp(ctx, pod, a, false))
	must(t, w.o.MoveLink(ctx, pod, a, netops.Host))
	if got, err := w.o.Routes(ctx, pod, 20001); err != nil || len(got) != 0 {
		t.Errorf("routes of the table after its link left: %v, %v", got, err)
	}
	if _, err := w.o.Sysctl(ctx, pod, key); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the sysctl of a link that left: %v, want fs.ErrNotExist", err)
	}
	def, err := w.o.Sysctl(ctx, netops.Host, "net/ipv4/conf/default/arp_ignore")
	if err != nil {
		t.Fatal(err)
	}
	if v, err := w.o.Sysctl(ctx, netops.Host, key); err != nil || v != def {
		t.Errorf("arp_ignore of the link back on the host: %q, %v; want the host's default %q", v, err, def)
	}
	if rules, err := w.o.Rules(ctx, pod); err != nil || len(rules) != 2 {
		t.Errorf("rules after the link left: %v, %v; want both still there", rules, err)
	}
	must(t, w.o.DelRule(ctx, pod, r4))
	must(t, w.o.DelRule(ctx, pod, r6))
	if err := w.o.DelRule(ctx, pod, r4); !errors.Is(err, syscall.ENOENT) {
		t.Errorf("deleting a missing rule: %v, want ENOENT", err)
	}
	if rules, err := w.o.Rules(ctx, pod); err != nil || len(rules) != 0 {
		t.Errorf("rules after deleting them: %v, %v", rules, err)
	}
}

func TestMultiRailContract(t *testing.T) {
	for _, impl := range []struct {
		name  string
		world func(t *testing.T) world
	}{{"Kernel", realWorld}, {"Fake", fakeWorld}} {
		t.Run(impl.name, func(t *testing.T) { multiRailContract(t, impl.world(t)) })
	}
}
