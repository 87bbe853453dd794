package cni

// More plugin-logic tests against netopstest.Fake (VF settings and RDMA
// moves are faked; see fake_add_del_test.go).

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/containernetworking/cni/pkg/types"

	"github.com/railyard-io/railyard/internal/netops"
)

func TestSecondAddOnBusyDeviceFailsTryAgainLaterFakeVF(t *testing.T) {
	w := newWorld(t)
	if _, err := w.plugin().Add(ctx, args("c1", pod1, "net1", w.conf(vfPCI, nil))); err != nil {
		t.Fatal(err)
	}
	_, err := w.plugin().Add(ctx, args("c2", pod2, "net1", w.conf(vfPCI, nil)))
	if Code(err) != types.ErrTryAgainLater || !strings.Contains(err.Error(), "c1") {
		t.Fatalf("second ADD: code %d, %v", Code(err), err)
	}
	if _, ok := w.ops.LinkIn(pod1, "net1"); !ok {
		t.Fatal("first pod lost its device")
	}
	if names := w.ops.LinkNames(pod2); len(names) != 0 {
		t.Fatalf("second pod got links %v", names)
	}
	if err := w.plugin().Del(ctx, args("c2", pod2, "net1", w.conf(vfPCI, nil))); err != nil {
		t.Fatalf("DEL of the failed attachment: %v", err)
	}
	if _, ok := w.ops.LinkIn(pod1, "net1"); !ok {
		t.Fatal("DEL of another container detached the first pod's device")
	}
}

func TestConcurrentAddDelOnOneDeviceNeverShareFakeVF(t *testing.T) {
	checkConcurrentAddDelOnOneDeviceNeverShare(newWorld(t), 20)
}

func TestCheckDetectsDriftFakeVFAndFakeRDMA(t *testing.T) {
	w := newWorld(t)
	a := args("c1", pod1, "net1", w.conf(vfPCI, nil))
	res, err := w.plugin().Add(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	prev, err := json.Marshal(res)
	must(t, err)
	withPrev := func(p []byte) Args {
		var m map[string]any
		must(t, json.Unmarshal(a.Config, &m))
		var r any
		must(t, json.Unmarshal(p, &r))
		m["prevResult"] = r
		b, _ := json.Marshal(m)
		return args("c1", pod1, "net1", b)
	}
	if err := w.plugin().Check(ctx, withPrev(prev)); err != nil {
		t.Fatalf("Check with prevResult: %v", err)
	}
	wrong := strings.Replace(string(prev), "192.168.50.10", "192.168.50.99", 1)
	if err := w.plugin().Check(ctx, withPrev([]byte(wrong))); err == nil {
		t.Fatal("Check accepted an address the interface lacks")
	}
	must(t, w.ops.MoveRDMA(ctx, pod1, "mlx5_3", netops.Host))
	if err := w.plugin().Check(ctx, a); err == nil || !strings.Contains(err.Error(), "RDMA") {
		t.Fatalf("Check with the RDMA device on the host: %v", err)
	}
	must(t, w.ops.MoveRDMA(ctx, netops.Host, "mlx5_3", pod1))
	must(t, w.ops.SetLinkUp(ctx, pod1, "net1", false))
	if err := w.plugin().Check(ctx, a); err == nil || !strings.Contains(err.Error(), "down") {
		t.Fatalf("Check with the link down: %v", err)
	}
	must(t, w.ops.SetLinkUp(ctx, pod1, "net1", true))
	must(t, w.ops.SetMTU(ctx, pod1, "net1", 1500))
	if err := w.plugin().Check(ctx, a); err == nil || !strings.Contains(err.Error(), "MTU") {
		t.Fatalf("Check with the wrong MTU: %v", err)
	}
	must(t, w.ops.SetMTU(ctx, pod1, "net1", 9000))
	must(t, w.plugin().Check(ctx, a))
	must(t, w.ops.SetVFVLAN(ctx, "ens1f0", 2, 200, 3, 0))
	if err := w.plugin().Check(ctx, a); err == nil || !strings.Contains(err.Error(), "vlan/qos 200/3, want 100/3") {
		t.Fatalf("Check with the VF's VLAN changed through the PF: %v", err)
	}
	must(t, w.ops.SetVFVLAN(ctx, "ens1f0", 2, 100, 3, 0))
	must(t, w.ops.SetVFTrust(ctx, "ens1f0", 2, false))
	if err := w.plugin().Check(ctx, a); err == nil || !strings.Contains(err.Error(), "trust false, want true") {
		t.Fatalf("Check with the VF untrusted: %v", err)
	}
	must(t, w.ops.SetVFTrust(ctx, "ens1f0", 2, true))
	must(t, w.ops.SetVFSpoofChk(ctx, "ens1f0", 2, true))
	if err := w.plugin().Check(ctx, a); err == nil || !strings.Contains(err.Error(), "spoofchk true, want false") {
		t.Fatalf("Check with spoofchk back on: %v", err)
	}
	must(t, w.ops.SetVFSpoofChk(ctx, "ens1f0", 2, false))
	must(t, w.plugin().Check(ctx, a))
	if err := w.plugin().Check(ctx, args("other", pod1, "net1", a.Config)); Code(err) != types.ErrUnknownContainer {
		t.Fatalf("Check of unknown container: code %d %v", Code(err), err)
	}
}

func TestStatusFakeRDMA(t *testing.T) {
	w := newWorld(t)
	a := args("", "", "", w.conf("", map[string]any{"deviceID": nil}))
	if err := w.plugin().Status(ctx, a); err != nil {
		t.Fatalf("Status: %v", err)
	}
	w.ops.SetRDMAMode("shared")
	err := w.plugin().Status(ctx, a)
	if Code(err) != types.ErrPluginNotAvailable || !strings.Contains(err.Error(), "shared") {
		t.Fatalf("Status in shared mode: code %d %v", Code(err), err)
	}
	noRDMA := w.conf(vfPCI, map[string]any{"rdma": false})
	if err := w.plugin().Status(ctx, args("", "", "", noRDMA)); err != nil {
		t.Fatalf("Status without rdma: %v", err)
	}
	w.ipam.fail["STATUS"] = errors.New("ipam down")
	if err := w.plugin().Status(ctx, args("", "", "", noRDMA)); Code(err) != types.ErrPluginNotAvailable {
		t.Fatalf("Status with IPAM down: code %d %v", Code(err), err)
	}
}

func TestAddFailsClearlyInSharedRDMAModeFakeRDMA(t *testing.T) {
	w := newWorld(t)
	w.ops.SetRDMAMode("shared")
	_, err := w.plugin().Add(ctx, args("c1", pod1, "net1", w.conf(vfPCI, nil)))
	if Code(err) != types.ErrPluginNotAvailable || !strings.Contains(err.Error(), "exclusive") {
		t.Fatalf("ADD: code %d %v", Code(err), err)
	}
	w.assertPristine()
}

func TestGCReleasesOnlyInvalidAttachmentsFakeVFAndFakeRDMA(t *testing.T) {
	checkGCReleasesOnlyInvalidAttachments(newWorld(t))
}

func TestAddByNetdevNameFakeVF(t *testing.T) {
	w := newWorld(t)
	conf := w.conf("", map[string]any{"deviceID": nil, "device": "ens1f0v2"})
	a := args("c1", pod1, "eth1", conf)
	res, err := w.plugin().Add(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	if res.Interfaces[0].PciID != vfPCI {
		t.Errorf("pciID %q, want %s resolved through sysfs", res.Interfaces[0].PciID, vfPCI)
	}
	must(t, w.plugin().Del(ctx, a))
	must(t, w.plugin().Del(ctx, a))
	if _, ok := w.ops.LinkIn(netops.Host, "ens1f0v2"); !ok {
		t.Fatal("device not back")
	}
}

func TestAltnameOfDeviceTakenInPodFakeVF(t *testing.T) {
	checkAltnameOfDeviceTakenInPod(newWorld(t), origLink.AltNames[0])
}

func TestInterfaceNameTakenInPodRollsBackFakeVF(t *testing.T) {
	w := newWorld(t)
	w.ops.AddLink(pod1, netops.Link{Name: "net1", MTU: 1500}, true)
	_, err := w.plugin().Add(ctx, args("c1", pod1, "net1", w.conf(vfPCI, nil)))
	if err == nil {
		t.Fatal("ADD succeeded over an existing pod interface")
	}
	if _, ok := w.ops.LinkIn(pod1, "net1"); !ok {
		t.Fatal("rollback removed the pod's own interface")
	}
	if l, ok := w.ops.LinkIn(netops.Host, origLink.Name); !ok || l.Alias != origLink.Alias || l.MTU != 1500 {
		t.Fatalf("device not restored: %+v", l)
	}
}

func TestErrorCodes(t *testing.T) {
	w := newWorld(t)
	cases := []struct {
		name string
		conf []byte
		a    func([]byte) Args
		code uint
	}{
		{"unknown field", w.conf(vfPCI, map[string]any{"bogus": 1}), nil, types.ErrUnsupportedField},
		{"bad mtu", w.conf(vfPCI, map[string]any{"mtu": 5}), nil, types.ErrInvalidNetworkConfig},
		{"no such PCI device", w.conf("0000:99:00.0", nil), nil, types.ErrInvalidNetworkConfig},
		{"VF settings on a PF", w.conf(pfPCI, map[string]any{"rdma": false}), nil, types.ErrInvalidNetworkConfig},
		{"not JSON", []byte("{"), nil, types.ErrDecodingFailure},
		{"bad ifname", w.conf(vfPCI, nil), func(c []byte) Args { return args("c1", pod1, "a/b", c) }, types.ErrInvalidEnvironmentVariables},
		{"missing netns", w.conf(vfPCI, nil), func(c []byte) Args { return args("c1", "/nonexistent", "net1", c) }, types.ErrInvalidEnvironmentVariables},
	}
	for _, c := range cases {
		a := args("c1", pod1, "net1", c.conf)
		if c.a != nil {
			a = c.a(c.conf)
		}
		_, err := w.plugin().Add(ctx, a)
		if got := Code(err); got != c.code {
			t.Errorf("%s: code %d, want %d (%v)", c.name, got, c.code, err)
		}
		if te := ToCNIError(err); te == nil || te.Msg == "" {
			t.Errorf("%s: no CNI error", c.name)
		}
	}
	w.assertPristine()
}
