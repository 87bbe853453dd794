//go:build linux

package cni

// Tests in this file run the plugin against the real kernel on a real
// SR-IOV VF: an igbvf VF of QEMU's emulated Intel 82576 (igb) PF, in the
// VM of `make vmtest` (hack/vm). They read the VM's real /sys and skip
// anywhere else (vmkernel.Require). They are the RealVF twins of the
// FakeVF tests in fake_add_del_test.go and fake_lifecycle_test.go.

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/railyard-io/railyard/internal/cni/state"
	"github.com/railyard-io/railyard/internal/containerdev"
	"github.com/railyard-io/railyard/internal/netops"
	"github.com/railyard-io/railyard/internal/netops/netnstest"
	"github.com/railyard-io/railyard/internal/netops/netopstest"
	"github.com/railyard-io/railyard/test/vm/vmkernel"
)

// vfWorld is VF 0 of the VM's first igb PF, reset to a new VF's settings
// through the PF, with a pod namespace; VF 1 and a second pod namespace
// are there for the tests that need two (vfEnv).
type vfWorld struct {
	t        *testing.T
	pf       vmkernel.PF
	vf       int
	pci      string
	dev      string
	pci2     string
	pod      string
	pod2     string
	orig     netops.Link
	origVF   netops.VFSettings
	stateDir string
	infoDir  string
	ipam     *fakeIPAM
}

func newVFWorld(t *testing.T) *vfWorld {
	t.Helper()
	vmkernel.Require(t)
	pf := vmkernel.FirstPF(t)
	vfs := vmkernel.EnsureVFs(t, pf.PCI, 2)
	vmkernel.ResetVF(t, pf.Netdev, 0)
	vmkernel.ResetVF(t, pf.Netdev, 1)
	dir := t.TempDir()
	w := &vfWorld{t: t, pf: pf, vf: 0, pci: vfs[0], dev: vmkernel.Netdev(t, vfs[0]), pci2: vfs[1],
		stateDir: filepath.Join(dir, "state"), infoDir: filepath.Join(dir, "devinfo"), ipam: newFakeIPAM()}
	w.pod = netnstest.NewNetns(t, "pod")
	w.pod2 = netnstest.NewNetns(t, "pod2")
	netnstest.IP(t, "link", "set", w.dev, "up")
	var err error
	w.orig, err = netops.Linux{}.Link(ctx, netops.Host, w.dev)
	must(t, err)
	w.origVF, err = netops.Linux{}.VF(ctx, pf.Netdev, w.vf)
	must(t, err)
	return w
}

// Conf asks for what sriov-cni users ask on an Ethernet VF: MTU, MAC,
// VLAN 100 with QoS 3, spoofchk off, trust on, and a device-info file.
// (igb has no link_state, and refuses a max_tx_rate while the PF's link
// is down: not asked.) VF 1 gets another MAC.
func (w *vfWorld) Conf(vf int, extra map[string]any) []byte {
	m := map[string]any{
		"cniVersion": "1.1.0", "name": "vf-net", "type": "railyard-cni",
		"deviceID": w.PCI(vf), "mtu": 1400, "mac": [...]string{"02:bb:00:00:00:09", "02:bb:00:00:00:0a"}[vf],
		"vlan": 100, "vlanQoS": 3, "spoofchk": "off", "trust": "on", "ipam": map[string]any{"type": "fake-ipam"},
		"stateDir": w.stateDir, "sysfsRoot": "/sys", "lockTimeout": "1s",
	}
	return confJSON(w.t, m, extra)
}

// conf is Conf(0, nil) with extra (`,"key":value...`) added.
func (w *vfWorld) conf(extra string) []byte {
	b := w.Conf(0, nil)
	return append(b[:len(b)-1], []byte(extra+"}")...)
}

func (w *vfWorld) plugin(o netops.Ops) *Plugin {
	return &Plugin{Ops: o, IPAM: w.ipam, BootID: "b", DeviceInfoDir: w.infoDir, TestRoot: os.TempDir()}
}

// args is container cid's ADD of VF 0 as net1, with the device-info file
// Multus names for it.
func (w *vfWorld) args(cid string) Args {
	return args(cid, w.pod, "net1", w.conf(`,"CNIDeviceInfoFile":"`+infoFile(w.infoDir, "vf-net", cid, "net1")+`"`))
}

// vfWorld as a vfEnv (twin_test.go): every call is netops.Linux's.

func (w *vfWorld) T() *testing.T     { return w.t }
func (w *vfWorld) Ops() netops.Ops   { return netops.Linux{} }
func (w *vfWorld) P() *Plugin        { return w.plugin(netops.Linux{}) }
func (w *vfWorld) PCI(vf int) string { return [...]string{w.pci, w.pci2}[vf] }
func (w *vfWorld) PFPCI() string     { return w.pf.PCI }
func (w *vfWorld) Pod(i int) string  { return [...]string{w.pod, w.pod2}[i] }
func (w *vfWorld) Orig() netops.Link { return w.orig }
func (w *vfWorld) Pristine()         { w.t.Helper(); w.assertPristine() }
func (w *vfWorld) StateDir() string  { return w.stateDir }
func (w *vfWorld) SysfsRoot() string { return "/sys" }
func (w *vfWorld) InfoDir() string   { return w.infoDir }
func (w *vfWorld) IPAM() *fakeIPAM   { return w.ipam }
func (w *vfWorld) KillPod(i int)     { netnstest.IP(w.t, "netns", "del", filepath.Base(w.Pod(i))) }
func (w *vfWorld) RevivePod(i int)   { netnstest.IP(w.t, "netns", "add", filepath.Base(w.Pod(i))) }

func (w *vfWorld) InPod(netns, name string) bool {
	_, err := netops.Linux{}.Link(ctx, netns, name)
	return err == nil
}

func (w *vfWorld) HostLink(name string) (netops.Link, bool) {
	l, err := netops.Linux{}.Link(ctx, netops.Host, name)
	return l, err == nil
}

// AddLink makes a veth pair with one end, name, in netns; the other end
// is on the host (removed at the end).
func (w *vfWorld) AddLink(netns, name string) {
	other := netnstest.Name("o")
	if netns == netops.Host {
		netnstest.IP(w.t, "link", "add", name, "type", "veth", "peer", "name", other)
		w.t.Cleanup(func() { _ = exec.Command("ip", "link", "del", name).Run() })
		return
	}
	netnstest.IP(w.t, "link", "add", other, "type", "veth", "peer", "name", name, "netns", filepath.Base(netns))
	w.t.Cleanup(func() { _ = exec.Command("ip", "link", "del", other).Run() })
}

// assertPristine checks the VF as the kernel reports it: its netdev on the
// host as before, the VF settings and the VF's MAC through the PF as
// before (all zeros: none, or the netdev's own), nothing in the pod, no
// record.
func (w *vfWorld) assertPristine() {
	w.t.Helper()
	lx := netops.Linux{}
	l, err := lx.Link(ctx, netops.Host, w.dev)
	if err != nil {
		w.t.Fatalf("VF netdev not on the host under %s: %v", w.dev, err)
	}
	o := w.orig
	if l.Index != o.Index || l.MTU != o.MTU || l.MAC.String() != o.MAC.String() || l.Up != o.Up || l.Alias != o.Alias {
		w.t.Errorf("host link %+v MAC %s, want %+v MAC %s", l, l.MAC, o, o.MAC)
	}
	if s, err := lx.VF(ctx, w.pf.Netdev, w.vf); err != nil || s != w.origVF {
		w.t.Errorf("VF settings %+v (%v), want %+v", s, err, w.origVF)
	}
	// None (all zeros) as before ADD, or the netdev's own MAC, which igbvf
	// tells the PF again when its netdev comes back up: never the pod's.
	if a, err := lx.VFAddresses(ctx, w.pf.Netdev, w.vf); err != nil ||
		(a.MAC.String() != "00:00:00:00:00:00" && a.MAC.String() != o.MAC.String()) {
		w.t.Errorf("VF MAC through the PF %s (%v), want none (00:00:00:00:00:00) or the netdev's own %s", a.MAC, err, o.MAC)
	}
	out, err := exec.Command("ip", "-n", filepath.Base(w.pod), "-o", "link", "show").CombinedOutput()
	if err != nil {
		w.t.Fatalf("listing pod links: %v %s", err, out)
	}
	if n := strings.Count(strings.TrimSpace(string(out)), "\n") + 1; n != 1 {
		w.t.Errorf("pod namespace has %d links:\n%s", n, out)
	}
	recs, err := state.Store{Dir: w.stateDir}.List()
	if err != nil || len(recs) != 0 {
		w.t.Errorf("records left: %v %v", recs, err)
	}
	if rules, err := lx.Rules(ctx, w.pod); err != nil || len(rules) != 0 {
		w.t.Errorf("routing rules left in the pod: %v %v", rules, err)
	}
	if n := w.ipam.allocated(); n != 0 {
		w.t.Errorf("%d addresses left", n)
	}
	if left, _ := filepath.Glob(filepath.Join(w.infoDir, "cni", "*")); len(left) != 0 {
		w.t.Errorf("device-info files left: %v", left)
	}
}

func TestAddCheckDelRealVF(t *testing.T) {
	w := newVFWorld(t)
	lx := netops.Linux{}
	p := w.plugin(lx)
	res, err := p.Add(ctx, w.args("c1"))
	if err != nil {
		t.Fatal(err)
	}
	if i := res.Interfaces[0]; i.PciID != w.pci || i.Mtu != 1400 || i.Mac != "02:bb:00:00:00:09" || i.Name != "net1" {
		t.Errorf("result %+v", i)
	}
	l, err := lx.Link(ctx, w.pod, "net1")
	if err != nil {
		t.Fatal(err)
	}
	if l.MTU != 1400 || l.MAC.String() != "02:bb:00:00:00:09" || !l.Up {
		t.Errorf("pod link %+v MAC %s", l, l.MAC)
	}
	if got, _ := lx.Link(ctx, netops.Host, w.dev); got.Name != "" {
		t.Errorf("VF netdev still on the host: %+v", got)
	}
	s, err := lx.VF(ctx, w.pf.Netdev, w.vf)
	if err != nil || s.VLAN != 100 || s.QoS != 3 || s.SpoofChk || !s.Trust {
		t.Errorf("VF settings through the PF %+v (%v), want VLAN 100 QoS 3 spoofchk off trust on", s, err)
	}
	// The MAC set in the pod shows through the PF (igb, its link working):
	// what DEL must put back to all zeros.
	if a, err := lx.VFAddresses(ctx, w.pf.Netdev, w.vf); err != nil || a.MAC.String() != "02:bb:00:00:00:09" {
		t.Errorf("VF MAC through the PF while attached %s (%v), want the pod's 02:bb:00:00:00:09", a.MAC, err)
	}
	info, err := os.ReadFile(infoFile(w.infoDir, "vf-net", "c1", "net1"))
	must(t, err)
	var di containerdev.DevInfo
	must(t, json.Unmarshal(info, &di))
	if di.Type != "pci" || di.PCI.PCIAddress != w.pci || di.PCI.PFPCIAddress != w.pf.PCI || di.PCI.RDMADevice != "" {
		t.Errorf("device info %s, want VF %s of PF %s without an RDMA device", info, w.pci, w.pf.PCI)
	}
	if err := p.Check(ctx, w.args("c1")); err != nil {
		t.Fatalf("Check: %v", err)
	}
	must(t, p.Del(ctx, w.args("c1")))
	w.assertPristine()
	must(t, p.Del(ctx, w.args("c1")))
	w.assertPristine()
}

func TestAddRollbackAtEveryStepRealVF(t *testing.T) {
	// vlan, spoofchk, trust, down, alias, rename, move, rename, MTU, MAC,
	// up, addresses, then multi-rail: arp_ignore, arp_announce, rp_filter,
	// the table's route, the rule.
	checkAddRollbackAtEveryStep(t, newVFWorld, vfArgs("c1", nil), 17)
}

// Without IPAM (and so without the addresses step) the device-info file
// is the last thing ADD writes: a fault at every step still leaves
// nothing.
func TestAddRollbackAtEveryStepWithoutIPAMRealVF(t *testing.T) {
	// vlan, spoofchk, trust, down, alias, rename, move, rename, MTU, MAC, up.
	checkAddRollbackAtEveryStep(t, newVFWorld, vfArgs("c1", map[string]any{"ipam": nil}), 11)
}

// vfArgs returns a function giving the args of container cid with
// Conf(0, extra) for a world.
func vfArgs(cid string, extra map[string]any) func(*vfWorld) Args {
	return func(w *vfWorld) Args { return args(cid, w.pod, "net1", w.Conf(0, extra)) }
}

func TestDelFaultAtEveryStepThenRetryRealVF(t *testing.T) {
	probe := newVFWorld(t)
	if _, err := probe.plugin(netops.Linux{}).Add(ctx, probe.args("c1")); err != nil {
		t.Fatal(err)
	}
	counter := netopstest.NewFailing(netops.Linux{}, 0)
	must(t, probe.plugin(counter).Del(ctx, probe.args("c1")))
	probe.assertPristine()
	n := counter.Mutations()
	// RDMA: none; down, rename, move, rename back, MTU, MAC, alias, up,
	// VLAN, VF MAC, spoofchk, trust.
	if n < 10 {
		t.Fatalf("DEL made only %d mutating calls: %v", n, counter.Calls())
	}
	for k := 1; k <= n; k++ {
		t.Run(fmt.Sprintf("step%02d", k), func(t *testing.T) {
			w := newVFWorld(t)
			if _, err := w.plugin(netops.Linux{}).Add(ctx, w.args("c1")); err != nil {
				t.Fatal(err)
			}
			if err := w.plugin(netopstest.NewFailing(netops.Linux{}, k)).Del(ctx, w.args("c1")); !errors.Is(err, netopstest.ErrInjected) {
				t.Fatalf("DEL error %v, want the injected failure", err)
			}
			must(t, w.plugin(netops.Linux{}).Del(ctx, w.args("c1")))
			w.assertPristine()
		})
	}
}

func TestCheckDetectsDriftRealVF(t *testing.T) {
	w := newVFWorld(t)
	p := w.plugin(netops.Linux{})
	if _, err := p.Add(ctx, w.args("c1")); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Del(ctx, w.args("c1")) })
	must(t, p.Check(ctx, w.args("c1")))
	vmkernel.Run(t, "ip", "link", "set", w.pf.Netdev, "vf", "0", "vlan", "200")
	if err := p.Check(ctx, w.args("c1")); err == nil || !strings.Contains(strings.ToLower(err.Error()), "vlan") {
		t.Errorf("Check with the VF's VLAN changed through the PF: %v", err)
	}
	vmkernel.Run(t, "ip", "link", "set", w.pf.Netdev, "vf", "0", "vlan", "100", "qos", "3")
	must(t, p.Check(ctx, w.args("c1")))
	netnstest.IP(t, "-n", filepath.Base(w.pod), "link", "set", "net1", "mtu", "1500")
	if err := p.Check(ctx, w.args("c1")); err == nil || !strings.Contains(err.Error(), "MTU") {
		t.Errorf("Check with the wrong MTU: %v", err)
	}
	netnstest.IP(t, "-n", filepath.Base(w.pod), "link", "set", "net1", "mtu", "1400")
	must(t, p.Del(ctx, w.args("c1")))
	w.assertPristine()
}

// The kernel returns a VF netdev to the host when its namespace dies.
func TestDelAfterNetnsDeletedRealVF(t *testing.T) {
	w := newVFWorld(t)
	p := w.plugin(netops.Linux{})
	if _, err := p.Add(ctx, w.args("c1")); err != nil {
		t.Fatal(err)
	}
	netnstest.IP(t, "netns", "del", filepath.Base(w.pod))
	must(t, p.Del(ctx, w.args("c1")))
	must(t, p.Del(ctx, w.args("c1")))
	netnstest.IP(t, "netns", "add", filepath.Base(w.pod))
	w.assertPristine()
}

// A VF netdev down before ADD stays down after DEL. On igb the VF still
// tells the PF the MAC DEL sets back on its netdev (its link has worked in
// the pod), so the PF ends with the netdev's own MAC, or all zeros when
// DEL's clearing through the PF came last: never the pod's (issue 15). The
// clearing step itself is TestDelClearsThePodsMACThroughThePFFakeVF's.
func TestDelLeavesNotThePodsMACThroughThePFRealVF(t *testing.T) {
	w := newVFWorld(t)
	netnstest.IP(t, "link", "set", w.dev, "down")
	var err error
	w.orig, err = netops.Linux{}.Link(ctx, netops.Host, w.dev)
	must(t, err)
	p := w.plugin(netops.Linux{})
	if _, err := p.Add(ctx, w.args("c1")); err != nil {
		t.Fatal(err)
	}
	if a, err := (netops.Linux{}).VFAddresses(ctx, w.pf.Netdev, w.vf); err != nil || a.MAC.String() != "02:bb:00:00:00:09" {
		t.Fatalf("VF MAC through the PF while attached %s (%v), want the pod's", a.MAC, err)
	}
	must(t, p.Del(ctx, w.args("c1")))
	a, err := (netops.Linux{}).VFAddresses(ctx, w.pf.Netdev, w.vf)
	t.Logf("VF MAC through the PF after DEL: %s (%v); the netdev's own: %s", a.MAC, err, w.orig.MAC)
	w.assertPristine()
}
