//go:build linux

package cni

// A DRA claim's devices moved by the real kernel: two veth ends stand in
// for the claim's PFs (a small fake sysfs maps their PCI addresses to
// them; no RDMA subsystem here, so "rdma" is off), the DRA view is the
// agent's format written by draview.Write, IPAM is the in-process fake.

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/containernetworking/cni/pkg/types"

	"github.com/railyard-io/railyard/internal/cni/sysfstest"
	"github.com/railyard-io/railyard/internal/draview"
	"github.com/railyard-io/railyard/internal/netops"
	"github.com/railyard-io/railyard/internal/netops/netnstest"
)

// TestRealNetnsDRAClaimMovesBothNetdevsVeth: pod ml/trainer's claim holds
// two PFs (veths here); the network listed twice moves both into the
// pod's namespace, in claim order, with their MTU set; a third listing is
// refused and moves nothing; CHECK passes on both; DEL after the claim
// was unprepared and DEL with the view gone both return the netdevs to
// the host under their names.
func TestRealNetnsDRAClaimMovesBothNetdevsVeth(t *testing.T) {
	netnstest.Require(t)
	dir := t.TempDir()
	sys, state, bdir := filepath.Join(dir, "sys"), filepath.Join(dir, "state"), filepath.Join(dir, "binding")
	peer := netnstest.NewNetns(t, "peer")
	pod := netnstest.NewNetns(t, "pod")
	tree, err := sysfstest.New(sys)
	must(t, err)
	pcis := []string{"0000:7f:00.0", "0000:7e:00.0"} // claim (rail) order, not address order
	var devs []string
	var claimDevs []draview.Device
	for i, pci := range pcis {
		dev := netnstest.Name(fmt.Sprintf("pf%d", i))
		netnstest.NewVeth(t, dev, peer)
		netnstest.IP(t, "link", "set", dev, "up")
		must(t, tree.AddNetdev(pci, dev))
		devs = append(devs, dev)
		claimDevs = append(claimDevs, draview.Device{PCI: pci, Resource: draRes, PF: pci, Rail: i})
	}
	must(t, draview.Write(bdir, draview.View{Pools: []string{draRes}, Claims: []draview.Claim{
		{Namespace: "ml", Name: "trainer-nics", UID: "c1", Pods: []draview.Pod{{Name: "trainer", UID: "u1"}}, Devices: claimDevs}}}))
	conf := []byte(fmt.Sprintf(`{"cniVersion":"1.1.0","name":"rdma-dra","type":"railyard-cni",
		"resourceName":%q,"bindingDir":%q,"mtu":9000,"ipam":{"type":"fake-ipam"},
		"stateDir":%q,"sysfsRoot":%q,"lockTimeout":"1s"}`, draRes, bdir, state, sys))
	ipam := newFakeIPAM()
	p := &Plugin{Ops: netops.Linux{}, IPAM: ipam, BootID: "b", TestRoot: os.TempDir()}
	var as []Args
	for i, ifname := range []string{"eth1", "eth2"} {
		a := args("sb1", pod, ifname, conf)
		a.PluginArgs = podCNIArgs
		res, err := p.Add(ctx, a)
		if err != nil {
			t.Fatalf("ADD %s: %v", ifname, err)
		}
		if res.Interfaces[0].PciID != pcis[i] {
			t.Fatalf("ADD %s attached %s, want %s", ifname, res.Interfaces[0].PciID, pcis[i])
		}
		l, err := netops.Linux{}.Link(ctx, pod, ifname)
		if err != nil || l.MTU != 9000 || !l.Up {
			t.Fatalf("%s in the pod: %+v, %v", ifname, l, err)
		}
		if _, err := (netops.Linux{}).Link(ctx, netops.Host, devs[i]); !errors.Is(err, netops.ErrLinkNotFound) {
			t.Fatalf("%s still on the host: %v", devs[i], err)
		}
		as = append(as, a)
	}
	third := args("sb1", pod, "eth3", conf)
	third.PluginArgs = podCNIArgs
	if _, err := p.Add(ctx, third); Code(err) != types.ErrTryAgainLater {
		t.Fatalf("third ADD: code %d, %v", Code(err), err)
	}
	if _, err := (netops.Linux{}).Link(ctx, pod, "eth3"); !errors.Is(err, netops.ErrLinkNotFound) {
		t.Fatalf("eth3 in the pod after a refused ADD: %v", err)
	}
	for _, a := range as {
		if err := p.Check(ctx, a); err != nil {
			t.Fatalf("CHECK %s: %v", a.IfName, err)
		}
	}
	must(t, draview.Write(bdir, draview.View{Pools: []string{draRes}})) // unprepared
	must(t, p.Del(ctx, as[0]))
	must(t, os.Remove(draview.Path(bdir)))
	must(t, p.Del(ctx, as[1]))
	for _, dev := range devs {
		l, err := netops.Linux{}.Link(ctx, netops.Host, dev)
		if err != nil || l.MTU != 1500 {
			t.Errorf("%s back on the host: %+v, %v (want MTU 1500 again)", dev, l, err)
		}
	}
	if n := ipam.allocated(); n != 0 {
		t.Errorf("%d addresses left", n)
	}
}
