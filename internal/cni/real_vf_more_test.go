//go:build linux

package cni

// More RealVF twins of FakeVF tests (see real_vf_test.go): where igb
// answers differently from the fake (which models mlx5), the test says so
// and checks that the plugin follows the kernel's answer cleanly.

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/containernetworking/cni/pkg/types"

	"github.com/railyard-io/railyard/internal/netops"
	"github.com/railyard-io/railyard/internal/netops/netnstest"
)

// igb has no 802.1ad VLANs on VFs ("protocol not supported"; mlx5, which
// the fake models, has): ADD fails with the kernel's answer and leaves the
// VF as it was.
func TestVLANProto8021ADRefusedByIGBRealVF(t *testing.T) {
	w := newVFWorld(t)
	conf := []byte(strings.Replace(string(w.conf(`,"vlanProto":"802.1ad"`)), `"vlanQoS":3,`, "", 1))
	_, err := w.plugin(netops.Linux{}).Add(ctx, args("c1", w.pod, "net1", conf))
	if err == nil || !strings.Contains(err.Error(), "protocol not supported") {
		t.Fatalf("ADD with an 802.1ad VLAN on igb: %v, want the kernel's \"protocol not supported\"", err)
	}
	w.assertPristine()
}

func TestSecondAddOnBusyDeviceFailsTryAgainLaterRealVF(t *testing.T) {
	w := newVFWorld(t)
	p := w.plugin(netops.Linux{})
	if _, err := p.Add(ctx, w.args("c1")); err != nil {
		t.Fatal(err)
	}
	pod2 := netnstest.NewNetns(t, "pod2")
	a2 := args("c2", pod2, "net1", w.conf(""))
	_, err := p.Add(ctx, a2)
	if Code(err) != types.ErrTryAgainLater || !strings.Contains(err.Error(), "c1") {
		t.Fatalf("second ADD: code %d, %v", Code(err), err)
	}
	if _, err := (netops.Linux{}).Link(ctx, w.pod, "net1"); err != nil {
		t.Fatalf("first pod lost its VF: %v", err)
	}
	must(t, p.Del(ctx, a2))
	if _, err := (netops.Linux{}).Link(ctx, w.pod, "net1"); err != nil {
		t.Fatalf("DEL of another container detached the first pod's VF: %v", err)
	}
	must(t, p.Del(ctx, w.args("c1")))
	w.assertPristine()
}

func TestAddByNetdevNameRealVF(t *testing.T) {
	w := newVFWorld(t)
	conf := []byte(strings.Replace(string(w.conf("")), `"deviceID":"`+w.pci+`"`, `"device":"`+w.dev+`"`, 1))
	a := args("c1", w.pod, "net1", conf)
	res, err := w.plugin(netops.Linux{}).Add(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	if res.Interfaces[0].PciID != w.pci {
		t.Errorf("pciID %q, want %s resolved through the real sysfs", res.Interfaces[0].PciID, w.pci)
	}
	must(t, w.plugin(netops.Linux{}).Del(ctx, a))
	must(t, w.plugin(netops.Linux{}).Del(ctx, a))
	w.assertPristine()
}

// The pod already has an interface with the requested name: the rename in
// the pod fails with the kernel's EEXIST and ADD rolls back.
func TestInterfaceNameTakenInPodRollsBackRealVF(t *testing.T) {
	w := newVFWorld(t)
	peer := netnstest.Name("tk")
	netnstest.IP(t, "link", "add", peer, "type", "veth", "peer", "name", "net1", "netns", filepath.Base(w.pod))
	t.Cleanup(func() { _ = exec.Command("ip", "link", "del", peer).Run() })
	_, err := w.plugin(netops.Linux{}).Add(ctx, w.args("c1"))
	if err == nil || !strings.Contains(err.Error(), "exists") {
		t.Fatalf("ADD onto a taken name: %v", err)
	}
	netnstest.IP(t, "link", "del", peer)
	w.assertPristine()
}

// A DEL that finds no record (state lost) still returns the VF netdev
// under its name and drops the marker.
func TestDelWithRecordRemovedRealVF(t *testing.T) {
	w := newVFWorld(t)
	checkDelWithRecordRemoved(t, w, w.args("c1"), w.stateDir, w.dev)
	// Without the record the MTU, MAC and VF settings cannot be known and
	// stay as the pod had them: put them back as an operator would, for
	// the next test.
	netnstest.IP(t, "link", "set", w.dev, "mtu", strconv.Itoa(w.orig.MTU), "address", w.orig.MAC.String(), "up")
	netnstest.IP(t, "link", "set", w.pf.Netdev, "vf", "0", "vlan", "0", "spoofchk", "on", "trust", "off", "mac", "00:00:00:00:00:00")
	w.assertPristine()
}

func TestAddRollbackWhenIPAMFailsRealVF(t *testing.T) {
	w := newVFWorld(t)
	w.ipam.fail["ADD"] = errors.New("range exhausted")
	_, err := w.plugin(netops.Linux{}).Add(ctx, w.args("c1"))
	if err == nil || !strings.Contains(err.Error(), "range exhausted") {
		t.Fatalf("ADD error %v", err)
	}
	w.assertPristine()
}

func TestDelAfterRestartNewPluginInstanceRealVF(t *testing.T) {
	w := newVFWorld(t)
	if _, err := w.plugin(netops.Linux{}).Add(ctx, w.args("c1")); err != nil {
		t.Fatal(err)
	}
	op := netops.NewOperation() // as railyard-cni runs: one handle per namespace
	defer op.Close()
	fresh := &Plugin{Ops: op, IPAM: w.ipam, BootID: "b", DeviceInfoDir: w.infoDir, TestRoot: os.TempDir()}
	must(t, fresh.Del(ctx, w.args("c1")))
	w.assertPristine()
}

// A record from an earlier boot (its pod is gone: the namespace deleted,
// the VF back on the host) does not block the next pod's ADD.
func TestStaleRecordFromPreviousBootIsReclaimedRealVF(t *testing.T) {
	w := newVFWorld(t)
	old := &Plugin{Ops: netops.Linux{}, IPAM: w.ipam, BootID: "boot-0", DeviceInfoDir: w.infoDir, TestRoot: os.TempDir()}
	if _, err := old.Add(ctx, w.args("c0")); err != nil {
		t.Fatal(err)
	}
	netnstest.IP(t, "netns", "del", filepath.Base(w.pod))
	pod2 := netnstest.NewNetns(t, "pod2")
	p := w.plugin(netops.Linux{})
	a2 := args("c1", pod2, "net1", w.conf(""))
	if _, err := p.Add(ctx, a2); err != nil {
		t.Fatalf("ADD after the reboot: %v", err)
	}
	if _, err := (netops.Linux{}).Link(ctx, pod2, "net1"); err != nil {
		t.Fatalf("VF not in the new pod: %v", err)
	}
	must(t, p.Del(ctx, a2))
	netnstest.IP(t, "netns", "add", filepath.Base(w.pod))
	w.assertPristine()
}
