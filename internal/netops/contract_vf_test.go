//go:build linux

package netops_test

import (
	"errors"
	"net"

	"testing"

	"github.com/railyard-io/railyard/internal/netops"
	"github.com/railyard-io/railyard/internal/netops/netnstest"
	"github.com/railyard-io/railyard/internal/netops/netopstest"
	"github.com/railyard-io/railyard/test/vm/vmkernel"
)

// vfWorld is one SR-IOV VF to run a VF contract case on: the real kernel's
// (an igbvf VF of QEMU's emulated igb PF, in the VM of make vmtest) or the
// fake's.
type vfWorld struct {
	o      netops.Ops
	pf     string // PF netdev
	vf     int    // VF number
	netdev string // the VF's own netdev, on the host
	netns  func() string
}

var zeroMAC = net.HardwareAddr{0, 0, 0, 0, 0, 0}

func realVFWorld(t *testing.T) vfWorld {
	vmkernel.Require(t)
	pf := vmkernel.FirstPF(t)
	vfs := vmkernel.EnsureVFs(t, pf.PCI, 2)
	vmkernel.ResetVF(t, pf.Netdev, 1)
	name := vmkernel.Netdev(t, vfs[1])
	l, err := netops.Linux{}.Link(ctx, netops.Host, name)
	must(t, err)
	t.Cleanup(func() {
		vmkernel.ResetVF(t, pf.Netdev, 1)
		_ = netops.Linux{}.SetMAC(ctx, netops.Host, name, l.MAC)
	})
	return vfWorld{o: &netops.Linux{}, pf: pf.Netdev, vf: 1, netdev: name,
		netns: func() string { return netnstest.NewNetns(t, "vfpod") }}
}

func fakeVFWorld(t *testing.T) vfWorld {
	f := netopstest.New()
	f.AddLink(netops.Host, netops.Link{Name: "eth0", MTU: 1500, MAC: mustMAC(t, "52:54:00:00:01:00")}, false)
	f.AddLink(netops.Host, netops.Link{Name: "eth3", Index: 7, MTU: 1500, MAC: mustMAC(t, "a6:30:7b:10:20:30")}, false)
	f.AddVF("eth0", 1, netops.VFSettings{SpoofChk: true})
	f.SetVFNetdev("eth0", 1, 7)
	n := 0
	return vfWorld{o: f, pf: "eth0", vf: 1, netdev: "eth3", netns: func() string {
		n++
		p := "/var/run/netns/vfpod" + string(rune('a'+n))
		f.AddNetns(p)
		return p
	}}
}

func mustMAC(t *testing.T, s string) net.HardwareAddr {
	t.Helper()
	m, err := net.ParseMAC(s)
	must(t, err)
	return m
}

func vfMAC(t *testing.T, w vfWorld) net.HardwareAddr {
	t.Helper()
	a, err := w.o.VFAddresses(ctx, w.pf, w.vf)
	must(t, err)
	return a.MAC
}

// vfContractCases is the kernel behaviour of VF settings made through the
// PF that railyard-cni and node setup rely on. TestVFContract runs it
// against the VM's igb (RealVF, skipped outside the VM) and the fake.
var vfContractCases = []struct {
	name string
	run  func(t *testing.T, w vfWorld)
}{
	{"a new VF has no VLAN, spoofchk on, trust off, and no administrative MAC", func(t *testing.T, w vfWorld) {
		s, err := w.o.VF(ctx, w.pf, w.vf)
		must(t, err)
		if s.VLAN != 0 || s.QoS != 0 || !s.SpoofChk || s.Trust || !netops.SameVLANProto(s.VLANProto, 0) {
			t.Errorf("new VF %+v", s)
		}
		if m := vfMAC(t, w); m.String() != zeroMAC.String() {
			t.Errorf("new VF's MAC through the PF %s, want all zeros", m)
		}
	}},
	{"VLAN and QoS, spoofchk and trust read back as set", func(t *testing.T, w vfWorld) {
		must(t, w.o.SetVFVLAN(ctx, w.pf, w.vf, 100, 3, 0))
		must(t, w.o.SetVFSpoofChk(ctx, w.pf, w.vf, false))
		must(t, w.o.SetVFTrust(ctx, w.pf, w.vf, true))
		s, err := w.o.VF(ctx, w.pf, w.vf)
		must(t, err)
		if s.VLAN != 100 || s.QoS != 3 || s.VLANProto != netops.VLANProto8021Q || s.SpoofChk || !s.Trust {
			t.Errorf("after setting: %+v", s)
		}
		must(t, w.o.SetVFVLAN(ctx, w.pf, w.vf, 0, 0, 0))
		must(t, w.o.SetVFSpoofChk(ctx, w.pf, w.vf, true))
		must(t, w.o.SetVFTrust(ctx, w.pf, w.vf, false))
		s, err = w.o.VF(ctx, w.pf, w.vf)
		must(t, err)
		if s.VLAN != 0 || s.QoS != 0 || !s.SpoofChk || s.Trust {
			t.Errorf("after clearing: %+v", s)
		}
	}},
	{"an administrative MAC reads back, and all zeros clears it", func(t *testing.T, w vfWorld) {
		m := mustMAC(t, "02:00:00:aa:bb:01")
		must(t, w.o.SetVFMAC(ctx, w.pf, w.vf, m))
		if got := vfMAC(t, w); got.String() != m.String() {
			t.Errorf("MAC through the PF %s, want %s", got, m)
		}
		must(t, w.o.SetVFMAC(ctx, w.pf, w.vf, zeroMAC))
		if got := vfMAC(t, w); got.String() != zeroMAC.String() {
			t.Errorf("MAC through the PF after clearing %s, want all zeros", got)
		}
	}},
	// Not in the table: whether the VF netdev's own MAC shows through the
	// PF. On igb it does once the VF's link works (after a PF-initiated
	// reset, or in a pod after ADD: TestAddCheckDelRealVF asserts it), and
	// not on a new VF that never had a carrier; the fake shows it at once.
	{"an administrative MAC is what the PF reports, whatever the VF netdev sets", func(t *testing.T, w vfWorld) {
		admin := mustMAC(t, "02:00:00:aa:bb:03")
		must(t, w.o.SetVFMAC(ctx, w.pf, w.vf, admin))
		err := w.o.SetMAC(ctx, netops.Host, w.netdev, mustMAC(t, "02:00:00:aa:bb:04"))
		// igb: nil on a new VF without carrier (the PF logs "attempted to
		// override administratively set MAC address"), EADDRNOTAVAIL once
		// its link works; the fake answers EADDRNOTAVAIL.
		t.Logf("SetMAC on the VF netdev with an administrative MAC: %v", err)
		if got := vfMAC(t, w); got.String() != admin.String() {
			t.Errorf("MAC through the PF %s, want %s", got, admin)
		}
	}},
	{"a VF number the PF does not have is an error", func(t *testing.T, w vfWorld) {
		if _, err := w.o.VF(ctx, w.pf, 6); err == nil {
			t.Error("VF 6 read")
		}
		if _, err := w.o.VFAddresses(ctx, w.pf, 6); err == nil {
			t.Error("VF 6 addresses read")
		}
	}},
	{"a VF netdev moves into a namespace and back with its settings", func(t *testing.T, w vfWorld) {
		must(t, w.o.SetVFVLAN(ctx, w.pf, w.vf, 200, 0, 0))
		pod := w.netns()
		must(t, w.o.MoveLink(ctx, netops.Host, w.netdev, pod))
		if _, err := w.o.Link(ctx, pod, w.netdev); err != nil {
			t.Fatalf("VF netdev not in the pod: %v", err)
		}
		if _, err := w.o.Link(ctx, netops.Host, w.netdev); !errors.Is(err, netops.ErrLinkNotFound) {
			t.Errorf("VF netdev still on the host: %v", err)
		}
		s, err := w.o.VF(ctx, w.pf, w.vf)
		if err != nil || s.VLAN != 200 {
			t.Errorf("VF settings while its netdev is away: %+v, %v", s, err)
		}
		must(t, w.o.MoveLink(ctx, pod, w.netdev, netops.Host))
		must(t, w.o.SetVFVLAN(ctx, w.pf, w.vf, 0, 0, 0))
	}},
}

func TestVFContract(t *testing.T) {
	for _, impl := range []struct {
		name  string
		world func(t *testing.T) vfWorld
	}{{"RealVF", realVFWorld}, {"FakeVF", fakeVFWorld}} {
		for _, c := range vfContractCases {
			t.Run(impl.name+"/"+c.name, func(t *testing.T) { c.run(t, impl.world(t)) })
		}
	}
}

// The igb driver's own answers, which differ from mlx5's (the fake models
// the latter): they are facts about that driver, not the contract, and are
// logged for docs/e2e.md.
func TestIGBDriverAnswersRealVF(t *testing.T) {
	w := realVFWorld(t)
	t.Logf("igb: max_tx_rate 100 with the PF up: %v", w.o.SetVFRate(ctx, w.pf, w.vf, 0, 100))
	must(t, w.o.SetVFRate(ctx, w.pf, w.vf, 0, 0))
	for what, err := range map[string]error{
		"802.1ad VLAN":      w.o.SetVFVLAN(ctx, w.pf, w.vf, 100, 0, netops.VLANProto8021AD),
		"link_state enable": w.o.SetVFLinkState(ctx, w.pf, w.vf, netops.VFLinkStateEnable),
		"GUID":              w.o.SetVFGUID(ctx, w.pf, w.vf, net.HardwareAddr{1, 2, 3, 4, 5, 6, 7, 8}),
	} {
		t.Logf("igb: %s: %v", what, err)
		if err == nil {
			t.Errorf("igb accepted %s", what)
		}
	}

}
