//go:build linux

package netops_test

import (
	"context"
	"errors"
	"net"
	"slices"
	"testing"

	current "github.com/containernetworking/cni/pkg/types/100"

	"github.com/railyard-io/railyard/internal/netops"
	"github.com/railyard-io/railyard/internal/netops/netnstest"
)

var ctx = context.Background()

// TestLinuxLinkOpsInRealNetns drives every link and namespace operation
// against the kernel on a veth pair.
func TestLinuxLinkOpsInRealNetns(t *testing.T) {
	netnstest.Require(t)
	var o netops.Linux
	peerNS := netnstest.NewNetns(t, "peer")
	pod := netnstest.NewNetns(t, "pod")
	name := netnstest.Name("v")
	netnstest.NewVeth(t, name, peerNS)

	l, err := o.Link(ctx, netops.Host, name)
	if err != nil {
		t.Fatal(err)
	}
	if l.Name != name || l.MTU != 1500 || len(l.MAC) != 6 || l.Up {
		t.Fatalf("fresh veth %+v", l)
	}
	if _, err := o.Link(ctx, netops.Host, name+"x"); !errors.Is(err, netops.ErrLinkNotFound) {
		t.Fatalf("missing link: %v, want ErrLinkNotFound", err)
	}
	mac, _ := net.ParseMAC("02:42:ac:11:00:07")
	alt := netnstest.Name("alt")
	for _, step := range []error{
		o.SetMTU(ctx, netops.Host, name, 1400),
		o.SetMAC(ctx, netops.Host, name, mac),
		o.SetAlias(ctx, netops.Host, name, "railyard test"),
		o.AddAltName(ctx, netops.Host, name, alt),
		o.SetLinkUp(ctx, netops.Host, name, true),
	} {
		if step != nil {
			t.Fatal(step)
		}
	}
	l, err = o.Link(ctx, netops.Host, alt)
	if err != nil {
		t.Fatalf("lookup by altname: %v", err)
	}
	if l.Name != name || l.MTU != 1400 || l.MAC.String() != mac.String() || l.Alias != "railyard test" ||
		!slices.Contains(l.AltNames, alt) || !l.Up {
		t.Fatalf("after changes %+v", l)
	}
	if byAlias, err := o.LinkByAlias(ctx, netops.Host, "railyard test"); err != nil || byAlias.Index != l.Index {
		t.Fatalf("LinkByAlias = %+v, %v", byAlias, err)
	}
	must(t, o.SetLinkUp(ctx, netops.Host, name, false))
	must(t, o.DelAltName(ctx, netops.Host, name, alt))
	tmp := netnstest.Name("t")
	must(t, o.RenameLink(ctx, netops.Host, name, tmp))
	must(t, o.MoveLink(ctx, netops.Host, tmp, pod))
	if _, err := o.Link(ctx, netops.Host, tmp); !errors.Is(err, netops.ErrLinkNotFound) {
		t.Fatalf("link still on the host after the move: %v", err)
	}
	must(t, o.RenameLink(ctx, pod, tmp, "net1"))
	must(t, o.SetLinkUp(ctx, pod, "net1", true))
	_, ipn, _ := net.ParseCIDR("192.168.77.5/24")
	ipn.IP = net.ParseIP("192.168.77.5").To4()
	res := &current.Result{IPs: []*current.IPConfig{{Address: *ipn, Interface: current.Int(0)}},
		Interfaces: []*current.Interface{{Name: "net1"}}}
	must(t, o.ConfigureIPs(ctx, pod, "net1", res))
	if err := o.CheckIPs(ctx, pod, "net1", res.IPs, nil); err != nil {
		t.Fatalf("CheckIPs: %v", err)
	}
	other := *ipn
	other.IP = net.ParseIP("192.168.77.6").To4()
	if err := o.CheckIPs(ctx, pod, "net1", []*current.IPConfig{{Address: other}}, nil); err == nil {
		t.Fatal("CheckIPs accepted an address the link lacks")
	}
	must(t, o.SetLinkUp(ctx, pod, "net1", false))
	must(t, o.RenameLink(ctx, pod, "net1", tmp))
	must(t, o.MoveLink(ctx, pod, tmp, netops.Host))
	must(t, o.RenameLink(ctx, netops.Host, tmp, name))
	l, err = o.Link(ctx, netops.Host, name)
	if err != nil || l.MTU != 1400 || l.Alias != "railyard test" {
		t.Fatalf("back on the host: %+v, %v", l, err)
	}

	if ok, err := o.NetnsExists(ctx, pod); !ok || err != nil {
		t.Fatalf("NetnsExists(pod) = %v, %v", ok, err)
	}
	if ok, err := o.NetnsExists(ctx, "/var/run/netns/does-not-exist-railyard"); ok || err != nil {
		t.Fatalf("NetnsExists(missing) = %v, %v", ok, err)
	}
	if err := o.MoveLink(ctx, netops.Host, name, "/var/run/netns/does-not-exist-railyard"); !errors.Is(err, netops.ErrNetnsNotFound) {
		t.Fatalf("move to a missing namespace: %v", err)
	}
}

// TestLinuxSRIOVAndRDMAUnavailableHere documents what this kernel cannot do:
// a veth has no VFs and there is no RDMA subsystem. The Linux code paths
// still run and must fail with an error, not succeed silently.
func TestLinuxSRIOVAndRDMAUnavailableHere(t *testing.T) {
	netnstest.Require(t)
	var o netops.Linux
	peerNS := netnstest.NewNetns(t, "peer")
	name := netnstest.Name("v")
	netnstest.NewVeth(t, name, peerNS)
	if _, err := o.VF(ctx, name, 0); err == nil {
		t.Fatal("VF settings of a veth")
	}
	if err := o.SetVFTrust(ctx, name, 0, true); err == nil {
		t.Fatal("VF trust set on a veth")
	}
	if mode, err := o.RDMANetnsMode(ctx); err == nil {
		t.Skipf("this machine has an RDMA subsystem (netns mode %q)", mode)
	}
	if in, err := o.RDMADeviceIn(ctx, netops.Host, "mlx5_0"); in {
		t.Fatalf("RDMA device found without RDMA (%v)", err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
