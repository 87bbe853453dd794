package cni

// Tests in this file run the plugin logic against netopstest.Fake: SR-IOV VF
// settings through the PF and RDMA netns moves cannot run on a machine
// without that hardware, so the names say FakeVF / FakeRDMA.

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/railyard-io/railyard/internal/cni/config"
	"github.com/railyard-io/railyard/internal/cni/state"
	"github.com/railyard-io/railyard/internal/containerdev"
	"github.com/railyard-io/railyard/internal/netops"
	"github.com/railyard-io/railyard/internal/netops/netopstest"
)

var ctx = context.Background()

func TestAddCheckDelFakeVFAndFakeRDMA(t *testing.T) {
	w := newWorld(t)
	p := w.plugin()
	a := args("c1", pod1, "net1", w.conf(vfPCI, map[string]any{"CNIDeviceInfoFile": infoFile(w.infoDir, "rdma-net", "c1", "net1")}))
	res, err := p.Add(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Interfaces) != 1 || res.Interfaces[0].PciID != vfPCI || res.Interfaces[0].Name != "net1" ||
		res.Interfaces[0].Mtu != 9000 || res.Interfaces[0].Mac != "02:bb:00:00:00:01" || res.Interfaces[0].Sandbox != pod1 {
		t.Errorf("result interface %+v", res.Interfaces[0])
	}
	if len(res.IPs) != 1 || res.IPs[0].Address.String() != "192.168.50.10/24" || *res.IPs[0].Interface != 0 {
		t.Errorf("result IPs %+v", res.IPs)
	}
	l, ok := w.ops.LinkIn(pod1, "net1")
	if !ok || l.MTU != 9000 || l.MAC.String() != "02:bb:00:00:00:01" || !l.Up || len(l.AltNames) != 0 {
		t.Fatalf("pod link %+v (found %v)", l, ok)
	}
	if got := w.ops.Addrs(pod1, "net1"); !slices.Equal(got, []string{"192.168.50.10/24"}) {
		t.Errorf("pod addresses %v", got)
	}
	if _, ok := w.ops.LinkIn(netops.Host, origLink.Name); ok {
		t.Error("device still on the host")
	}
	want := netops.VFSettings{VLAN: 100, QoS: 3, VLANProto: netops.VLANProto8021Q, SpoofChk: false, Trust: true, LinkState: netops.VFLinkStateEnable, MinTxRate: 100, MaxTxRate: 2000}
	if got := w.ops.VFSettingsOf("ens1f0", 2); got != want {
		t.Errorf("VF settings %+v, want %+v", got, want)
	}
	if where, _ := w.ops.RDMANetns("mlx5_3"); where != pod1 {
		t.Errorf("RDMA device in %q, want pod1", where)
	}
	info, err := os.ReadFile(infoFile(w.infoDir, "rdma-net", "c1", "net1"))
	if err != nil {
		t.Fatal(err)
	}
	var di containerdev.DevInfo
	must(t, json.Unmarshal(info, &di))
	if di.Type != "pci" || di.Version != "1.1.0" || di.PCI.PCIAddress != vfPCI || di.PCI.PFPCIAddress != pfPCI || di.PCI.RDMADevice != "mlx5_3" {
		t.Errorf("device info %s", info)
	}
	rec, err := state.Store{Dir: w.stateDir}.Get(vfPCI)
	if err != nil || rec.Phase != state.PhaseAttached || rec.ContainerID != "c1" {
		t.Fatalf("record %+v, %v", rec, err)
	}

	if err := p.Check(ctx, a); err != nil {
		t.Fatalf("Check: %v", err)
	}

	before := len(w.ops.Calls())
	if err := p.Del(ctx, a); err != nil {
		t.Fatal(err)
	}
	w.assertPristine()
	calls := w.ops.Calls()[before:]
	rdma, link := indexOf(calls, "MoveRDMA("), indexOf(calls, "MoveLink(")
	if rdma < 0 || link < 0 || rdma > link {
		t.Errorf("DEL must move the RDMA device back before the netdev: %v", calls)
	}
	if err := p.Del(ctx, a); err != nil {
		t.Fatalf("second DEL: %v", err)
	}
	w.assertPristine()
}

func indexOf(calls []string, prefix string) int {
	return slices.IndexFunc(calls, func(c string) bool { return strings.HasPrefix(c, prefix) })
}

// addMutations counts the mutating calls of one successful ADD.
func addMutations(t *testing.T) int {
	w := newWorld(t)
	w.ops.FailAtMutation(0)
	if _, err := w.plugin().Add(ctx, args("c1", pod1, "net1", w.conf(vfPCI, nil))); err != nil {
		t.Fatal(err)
	}
	return w.ops.Mutations()
}

func TestAddRollbackAtEveryStepFakeVFAndFakeRDMA(t *testing.T) {
	n := addMutations(t)
	// vlan, spoofchk, trust, link_state, rate, down, alias, altname, rename,
	// move, RDMA move, rename, MTU, MAC, up, addresses, then multi-rail:
	// arp_ignore, arp_announce, rp_filter, the table's route, the rule.
	if n != 21 {
		t.Fatalf("ADD made %d mutating calls, want 21", n)
	}
	for k := 1; k <= n; k++ {
		w := newWorld(t)
		w.ops.FailAtMutation(k)
		_, err := w.plugin().Add(ctx, args("c1", pod1, "net1", w.conf(vfPCI, nil)))
		if !errors.Is(err, netopstest.ErrInjected) {
			t.Fatalf("step %d: ADD error %v, want the injected failure", k, err)
		}
		w.assertPristine()
		if t.Failed() {
			t.Fatalf("step %d: calls %v", k, w.ops.Calls())
		}
	}
}

func TestAddRollbackWhenIPAMFailsFakeVFAndFakeRDMA(t *testing.T) {
	w := newWorld(t)
	w.ipam.fail["ADD"] = errors.New("range exhausted")
	_, err := w.plugin().Add(ctx, args("c1", pod1, "net1", w.conf(vfPCI, nil)))
	if err == nil || !strings.Contains(err.Error(), "range exhausted") {
		t.Fatalf("ADD error %v", err)
	}
	w.assertPristine()
}

func TestAddRollbackWhenDeviceInfoCannotBeWrittenFakeVF(t *testing.T) {
	checkAddRollbackWhenDeviceInfoCannotBeWritten(newWorld(t))
}

func TestDelFaultAtEveryStepThenRetryFakeVFAndFakeRDMA(t *testing.T) {
	w := newWorld(t)
	a := args("c1", pod1, "net1", w.conf(vfPCI, nil))
	if _, err := w.plugin().Add(ctx, a); err != nil {
		t.Fatal(err)
	}
	w.ops.FailAtMutation(0)
	if err := w.plugin().Del(ctx, a); err != nil {
		t.Fatal(err)
	}
	n := w.ops.Mutations()
	if n < 10 {
		t.Fatalf("DEL made only %d mutating calls", n)
	}
	for k := 1; k <= n; k++ {
		w := newWorld(t)
		a := args("c1", pod1, "net1", w.conf(vfPCI, nil))
		if _, err := w.plugin().Add(ctx, a); err != nil {
			t.Fatal(err)
		}
		w.ops.FailAtMutation(k)
		if err := w.plugin().Del(ctx, a); !errors.Is(err, netopstest.ErrInjected) {
			t.Fatalf("step %d: DEL error %v, want the injected failure", k, err)
		}
		if _, err := (state.Store{Dir: w.stateDir}).Get(vfPCI); err != nil {
			t.Fatalf("step %d: record dropped after a failed DEL: %v", k, err)
		}
		w.ops.FailAtMutation(0)
		if err := w.plugin().Del(ctx, a); err != nil {
			t.Fatalf("step %d: retried DEL: %v", k, err)
		}
		w.assertPristine()
	}
}

func TestDelAfterNetnsDeletedFakeVFAndFakeRDMA(t *testing.T) {
	w := newWorld(t)
	a := args("c1", pod1, "net1", w.conf(vfPCI, nil))
	if _, err := w.plugin().Add(ctx, a); err != nil {
		t.Fatal(err)
	}
	// The kernel returns a physical netdev to the host under its pod name
	// and RDMA devices to the host when the namespace dies.
	w.ops.DeleteNetns(pod1)
	if _, ok := w.ops.LinkIn(netops.Host, "net1"); !ok {
		t.Fatal("fake did not refund the device")
	}
	if err := w.plugin().Del(ctx, a); err != nil {
		t.Fatal(err)
	}
	w.ops.AddNetns(pod1) // assertPristine looks at it
	w.assertPristine()
}

func TestDelAfterNetnsDeletedWithNameTakenFakeVF(t *testing.T) {
	checkDelAfterNetnsDeletedWithNameTaken(newWorld(t)) // the fake refunds it as dev0
}

func TestDelWithRecordRemovedFakeVFAndFakeRDMA(t *testing.T) {
	w := newWorld(t)
	a := args("c1", pod1, "net1", w.conf(vfPCI, nil))
	if _, err := w.plugin().Add(ctx, a); err != nil {
		t.Fatal(err)
	}
	must(t, os.RemoveAll(filepath.Join(w.stateDir, "devices")))
	if err := w.plugin().Del(ctx, a); err != nil {
		t.Fatal(err)
	}
	// Without the record the original name, MTU, MAC and up state come
	// from the alias marker; alias, altnames and VF settings were only in
	// the record.
	l, ok := w.ops.LinkIn(netops.Host, origLink.Name)
	if !ok {
		t.Fatalf("device not back under its name: host %v pod %v", w.ops.LinkNames(netops.Host), w.ops.LinkNames(pod1))
	}
	if l.MTU != origLink.MTU || l.MAC.String() != origLink.MAC.String() || l.Up != origLink.Up {
		t.Errorf("host link MTU %d MAC %s up %v, want the original MTU %d MAC %s up %v (it stayed down with the pod's MTU)",
			l.MTU, l.MAC, l.Up, origLink.MTU, origLink.MAC, origLink.Up)
	}
	if strings.HasPrefix(l.Alias, markerPrefix) {
		t.Errorf("marker alias left: %q", l.Alias)
	}
	if where, _ := w.ops.RDMANetns("mlx5_3"); where != netops.Host {
		t.Errorf("RDMA device in %q", where)
	}
	if n := w.ipam.allocated(); n != 0 {
		t.Errorf("%d addresses left", n)
	}
	if err := w.plugin().Del(ctx, a); err != nil {
		t.Fatalf("second DEL: %v", err)
	}
}

func TestDelAfterRestartNewPluginInstanceFakeVFAndFakeRDMA(t *testing.T) {
	w := newWorld(t)
	a := args("c1", pod1, "net1", w.conf(vfPCI, nil))
	if _, err := w.plugin().Add(ctx, a); err != nil {
		t.Fatal(err)
	}
	fresh := &Plugin{Ops: w.ops, IPAM: w.ipam, BootID: "boot-1", DeviceInfoDir: w.infoDir, TestRoot: os.TempDir()}
	if err := fresh.Del(ctx, a); err != nil {
		t.Fatal(err)
	}
	w.assertPristine()
}

func TestDelOfUnknownAttachmentChangesNothing(t *testing.T) {
	w := newWorld(t)
	w.ops.FailAtMutation(0)
	if err := w.plugin().Del(ctx, args("never-added", pod1, "net1", w.conf(vfPCI, nil))); err != nil {
		t.Fatal(err)
	}
	if n := w.ops.Mutations(); n != 0 {
		t.Fatalf("%d mutating calls: %v", n, w.ops.Calls())
	}
	if err := w.plugin().Del(ctx, args("never-added", "", "net1", w.conf(vfPCI, nil))); err != nil {
		t.Fatalf("DEL without netns: %v", err)
	}
}

// TestStaleRecordFromPreviousBootIsReclaimedFakeVF: after a reboot, a
// record of the previous boot is reclaimed by the next ADD of its device,
// whichever version a power loss left: the attached record, or the one
// ADD staged (adding, no result: the attached update's rename is not made
// durable, state.Store.Advance). Either way its IPAM allocation is
// released (with the staged configuration), its device-info file removed
// and the device attached to the new pod.
func TestStaleRecordFromPreviousBootIsReclaimedFakeVF(t *testing.T) {
	for _, left := range []string{state.PhaseAttached, state.PhaseAdding} {
		t.Run(left, func(t *testing.T) {
			w := newWorld(t)
			old := &Plugin{Ops: w.ops, IPAM: w.ipam, BootID: "boot-0", DeviceInfoDir: w.infoDir, TestRoot: os.TempDir()}
			oldInfo := infoFile(w.infoDir, "rdma-net", "c0", "net1")
			if _, err := old.Add(ctx, args("c0", pod1, "net1", w.conf(vfPCI, map[string]any{"CNIDeviceInfoFile": oldInfo}))); err != nil {
				t.Fatal(err)
			}
			if left == state.PhaseAdding {
				store := state.Store{Dir: w.stateDir}
				rec, err := store.Get(vfPCI)
				if err != nil {
					t.Fatal(err)
				}
				rec.Phase, rec.Result, rec.RailTable, rec.GID, rec.Pod = state.PhaseAdding, nil, 0, nil, nil
				must(t, store.Put(rec))
			}
			if n := w.ipam.allocated(); n != 1 {
				t.Fatalf("%d IPAM allocations before the reboot, want 1", n)
			}
			w.ops.DeleteNetns(pod1) // the node rebooted: pods are gone
			w.ops.AddNetns(pod2 + "x")
			if _, err := w.plugin().Add(ctx, args("c1", pod2+"x", "net1", w.conf(vfPCI, nil))); err != nil {
				t.Fatalf("ADD after reboot: %v", err)
			}
			if _, ok := w.ops.LinkIn(pod2+"x", "net1"); !ok {
				t.Fatal("device not attached to the new pod")
			}
			if n := w.ipam.allocated(); n != 1 {
				t.Errorf("%d IPAM allocations after the reboot's ADD, want 1 (the stale one released)", n)
			}
			if _, err := os.Stat(oldInfo); !os.IsNotExist(err) {
				t.Fatalf("device-info file of the attachment from the previous boot: %v, want removed", err)
			}
		})
	}
}

// A VF whose netdev was down before ADD stays down after DEL, so the VF
// never tells the PF its own MAC again: the pod's MAC, which the PF learnt
// while the pod had the netdev up, must be cleared through the PF (issue
// 15: found on a real igb VF).
func TestDelClearsThePodsMACThroughThePFFakeVF(t *testing.T) {
	w := newWorld(t)
	a := args("c1", pod1, "net1", w.conf(vf2PCI, nil))
	if _, err := w.plugin().Add(ctx, a); err != nil {
		t.Fatal(err)
	}
	if got, _ := w.ops.VFAddresses(ctx, "ens1f0", 3); got.MAC.String() != "02:bb:00:00:00:01" {
		t.Fatalf("VF MAC through the PF while attached %s, want the pod's", got.MAC)
	}
	must(t, w.plugin().Del(ctx, a))
	if got, _ := w.ops.VFAddresses(ctx, "ens1f0", 3); got.MAC.String() != "00:00:00:00:00:00" {
		t.Errorf("VF MAC through the PF after DEL %s, want none (all zeros)", got.MAC)
	}
	if l, ok := w.ops.LinkIn(netops.Host, "ens1f0v3"); !ok || l.Up || l.MAC.String() != origMAC.String() {
		t.Errorf("host link %+v", l)
	}
}

// FuzzParseMarker: parseMarker never panics on an alias, and a marker of a
// netdev reads back the key, name and host settings it was made from.
func FuzzParseMarker(f *testing.F) {
	f.Add("railyard-cni 0000:03:00.2 ens1f0v2 mtu=1500 up=1 mac=02:aa:00:00:00:02", "k", "eth0", 9000, true)
	f.Add("railyard-cni netdev-eth1 eth1", "netdev-x", "x", 68, false)
	f.Add("railyard-cni a b mtu=x", "a", "b", 65535, true)
	f.Fuzz(func(t *testing.T, alias, key, name string, mtu int, up bool) {
		parseMarker(alias)
		if !state.ValidKey(key) || strings.Contains(key, " ") || config.ValidIfName(name) != nil || mtu < 68 || mtu > 65535 {
			return
		}
		orig := netops.Link{Name: name, MTU: mtu, Up: up, MAC: origMAC}
		m, ok := parseMarker(deviceMarker(key, orig))
		want := markerInfo{Key: key, Orig: name, Host: netops.Link{Name: name, Index: -1, MTU: mtu, Up: up, MAC: origMAC}, Settings: true}
		if !ok {
			t.Fatalf("marker %q does not parse", deviceMarker(key, orig))
		}
		if diff := cmp.Diff(want, m); diff != "" {
			t.Fatalf("marker %q (-want +got):\n%s", deviceMarker(key, orig), diff)
		}
	})
}
