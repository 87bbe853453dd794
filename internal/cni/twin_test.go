package cni

// One test body, two backends: a FakeVF test and its RealVF twin run the
// same function against vfEnv, implemented by the fake node (world,
// netopstest.Fake) and by the VM's igb VF (vfWorld, real_vf_test.go).

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/containernetworking/cni/pkg/types"

	"github.com/railyard-io/railyard/internal/cni/state"
	"github.com/railyard-io/railyard/internal/netops"
)

// vfEnv is a node with two VFs of one PF (VF 0 is the one under test) and
// two pod namespaces.
type vfEnv interface {
	T() *testing.T
	Ops() netops.Ops
	P() *Plugin // over Ops()
	// Conf is the configuration of VF vf (0 or 1); extra overrides keys, a
	// nil value removes one.
	Conf(vf int, extra map[string]any) []byte
	PCI(vf int) string
	PFPCI() string
	Pod(i int) string
	Orig() netops.Link // VF 0's host netdev before the test
	InPod(netns, name string) bool
	HostLink(name string) (netops.Link, bool)
	// AddLink puts a link named name in netns (netops.Host: the host) that
	// is none of the plugin's.
	AddLink(netns, name string)
	KillPod(i int)   // the pod's namespace dies (the kernel refunds VFs)
	RevivePod(i int) // an empty namespace under the same path again
	Pristine()       // VF 0 as it started, nothing left anywhere
	StateDir() string
	SysfsRoot() string
	InfoDir() string
	IPAM() *fakeIPAM
}

// The fake node as a vfEnv (VF 0 = 0000:03:00.2, VF 1 = 0000:03:00.3).

func (w *world) T() *testing.T     { return w.t }
func (w *world) Ops() netops.Ops   { return w.ops }
func (w *world) P() *Plugin        { return w.plugin() }
func (w *world) PFPCI() string     { return pfPCI }
func (w *world) Orig() netops.Link { return origLink }
func (w *world) StateDir() string  { return w.stateDir }
func (w *world) SysfsRoot() string { return w.sysfs }
func (w *world) InfoDir() string   { return w.infoDir }
func (w *world) IPAM() *fakeIPAM   { return w.ipam }
func (w *world) Pristine()         { w.t.Helper(); w.assertPristine() }
func (w *world) PCI(vf int) string { return [...]string{vfPCI, vf2PCI}[vf] }
func (w *world) Pod(i int) string  { return [...]string{pod1, pod2}[i] }
func (w *world) KillPod(i int)     { w.ops.DeleteNetns(w.Pod(i)) }
func (w *world) RevivePod(i int)   { w.ops.AddNetns(w.Pod(i)) }
func (w *world) Conf(vf int, extra map[string]any) []byte {
	return w.conf(w.PCI(vf), extra)
}
func (w *world) InPod(netns, name string) bool { _, ok := w.ops.LinkIn(netns, name); return ok }
func (w *world) HostLink(name string) (netops.Link, bool) {
	return w.ops.LinkIn(netops.Host, name)
}
func (w *world) AddLink(netns, name string) {
	w.ops.AddLink(netns, netops.Link{Name: name, MTU: 1500}, true)
}

// with returns m with key set to v (a copy; m may be nil).
func with(m map[string]any, kv ...any) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		out[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i].(string)] = kv[i+1]
	}
	return out
}

// netName is the network name of e's configurations.
func netName(e vfEnv) string {
	var n struct{ Name string }
	must(e.T(), json.Unmarshal(e.Conf(0, nil), &n))
	return n.Name
}

func checkAddRollbackWhenDeviceInfoCannotBeWritten(e vfEnv) {
	t := e.T()
	// A file where the "cni" directory should be: the write fails after
	// the device moved.
	must(t, os.MkdirAll(e.InfoDir(), 0o755))
	must(t, os.WriteFile(filepath.Join(e.InfoDir(), "cni"), nil, 0o600))
	defer os.Remove(filepath.Join(e.InfoDir(), "cni"))
	conf := e.Conf(0, map[string]any{"CNIDeviceInfoFile": infoFile(e.InfoDir(), netName(e), "c1", "net1")})
	_, err := e.P().Add(ctx, args("c1", e.Pod(0), "net1", conf))
	if err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Fatalf("ADD with the device-info file under a file: %v, want ENOTDIR", err)
	}
	e.Pristine()
}

// checkAddRefusesTheHostsOwnNetns: CNI_NETNS naming the host's own
// namespace under another path (hostPath) is refused before anything
// changes; comparing paths let ADD rename the host's netdev in the host.
func checkAddRefusesTheHostsOwnNetns(e vfEnv, hostPath string) {
	t := e.T()
	_, err := e.P().Add(ctx, args("c1", hostPath, "net1", e.Conf(0, nil)))
	if code := ToCNIError(err).Code; code != types.ErrInvalidEnvironmentVariables || !strings.Contains(err.Error(), "host's own") {
		t.Fatalf("ADD into the host's namespace: code %d, %v", code, err)
	}
	e.Pristine()
}

// checkRollbackMessageSaysWhatIsLeft: when IPAM fails on ADD and on the
// rollback's DEL, the device is restored and its record removed, and the
// error says so instead of "record kept for DEL/GC".
func checkRollbackMessageSaysWhatIsLeft(e vfEnv) {
	t := e.T()
	e.IPAM().fail["ADD"] = fmt.Errorf("failed to find plugin %q", "nosuchipam")
	e.IPAM().fail["DEL"] = fmt.Errorf("failed to find plugin %q", "nosuchipam")
	_, err := e.P().Add(ctx, args("c1", e.Pod(0), "net1", e.Conf(0, nil)))
	if err == nil {
		t.Fatal("ADD succeeded")
	}
	if strings.Contains(err.Error(), "record kept") || !strings.Contains(err.Error(), "device restored") {
		t.Errorf("error %q", err)
	}
	delete(e.IPAM().fail, "DEL")
	e.Pristine()
}

// checkAddOnAMissingDeviceLeavesNoLockFile: a device that does not exist
// is refused before its lock file is created, so configurations naming
// random devices cannot fill the state directory.
func checkAddOnAMissingDeviceLeavesNoLockFile(e vfEnv) {
	t := e.T()
	for _, conf := range [][]byte{
		e.Conf(0, map[string]any{"deviceID": "0000:99:00.7"}),
		e.Conf(0, map[string]any{"deviceID": nil, "device": "nosuchnic0", "vlan": nil, "vlanQoS": nil,
			"spoofchk": nil, "trust": nil, "link_state": nil, "min_tx_rate": nil, "max_tx_rate": nil, "rdma": false}),
	} {
		_, err := e.P().Add(ctx, args("c1", e.Pod(0), "net1", conf))
		if code := ToCNIError(err).Code; code != types.ErrInvalidNetworkConfig {
			t.Errorf("ADD on a missing device: code %d, %v", code, err)
		}
	}
	if locks, _ := os.ReadDir(filepath.Join(e.StateDir(), "locks")); len(locks) != 0 {
		t.Errorf("lock files left: %v", locks)
	}
	e.Pristine()
}

// checkDelAfterNetnsDeletedWithNameTaken: the pod's namespace dies while
// the host has a link of the pod's interface name, so the kernel refunds
// the VF netdev under another name (dev%d); DEL finds it and restores it.
func checkDelAfterNetnsDeletedWithNameTaken(e vfEnv) {
	t := e.T()
	a := args("c1", e.Pod(0), "net1", e.Conf(0, nil))
	if _, err := e.P().Add(ctx, a); err != nil {
		t.Fatal(err)
	}
	e.AddLink(netops.Host, "net1")
	e.KillPod(0)
	must(t, e.P().Del(ctx, a))
	e.RevivePod(0)
	o := e.Orig()
	if l, ok := e.HostLink(o.Name); !ok || l.MTU != o.MTU || l.Alias != o.Alias || l.Index != o.Index {
		t.Fatalf("device not restored: %+v %v, want %+v", l, ok, o)
	}
	e.Pristine()
}

// checkAltnameOfDeviceTakenInPod: a pod interface already carries the name
// the host device has as an altname: ADD drops the altnames before the
// move (they would collide in the pod) and DEL puts them back.
func checkAltnameOfDeviceTakenInPod(e vfEnv, alt string) {
	t := e.T()
	e.AddLink(e.Pod(0), alt)
	a := args("c1", e.Pod(0), "net1", e.Conf(0, nil))
	if _, err := e.P().Add(ctx, a); err != nil {
		t.Fatalf("ADD: %v", err)
	}
	if l, err := e.Ops().Link(ctx, e.Pod(0), "net1"); err != nil || len(l.AltNames) != 0 {
		t.Errorf("pod link %+v (%v), want no altnames", l, err)
	}
	must(t, e.P().Del(ctx, a))
	l, ok := e.HostLink(e.Orig().Name)
	if !ok || len(l.AltNames) != 1 || l.AltNames[0] != alt {
		t.Fatalf("altnames not restored: %+v, want [%s]", l, alt)
	}
}

// checkMultusDelegateAddDel: the configuration Multus sends (with
// pciBusID) attaches and releases the device.
func checkMultusDelegateAddDel(e vfEnv) {
	t := e.T()
	p := e.P()
	a := args("c1", e.Pod(0), "net1", multusDelegate(t, e.Conf(0, map[string]any{"deviceID": nil}), e.PCI(0)))
	if _, err := p.Add(ctx, a); err != nil {
		t.Fatal(err)
	}
	if !e.InPod(e.Pod(0), "net1") {
		t.Fatal("net1 not in the pod")
	}
	must(t, p.Check(ctx, a))
	must(t, p.Del(ctx, a))
	e.Pristine()
}

// checkDelReleasesOnConfigsAddRejects: DEL parses only what it needs, so a
// configuration ADD would refuse (a field this version does not know,
// values out of range, a document with only the state directory) still
// releases the device, its addresses and its record. This is what kept
// pods Terminating for good when Multus's pciBusID was unknown.
func checkDelReleasesOnConfigsAddRejects(t *testing.T, newEnv func(*testing.T) vfEnv) {
	cases := map[string]func(e vfEnv) []byte{
		"unknown field": func(e vfEnv) []byte {
			return e.Conf(0, map[string]any{"aFieldFromTheFuture": true})
		},
		"values ADD rejects": func(e vfEnv) []byte {
			return e.Conf(0, map[string]any{"mtu": "jumbo", "vlan": 99999, "mac": "ff:ff:ff:ff:ff:ff"})
		},
		"no device, only the state directory": func(e vfEnv) []byte {
			return []byte(fmt.Sprintf(`{"stateDir":%q,"sysfsRoot":%q,"deviceID":42}`, e.StateDir(), e.SysfsRoot()))
		},
	}
	for name, delConf := range cases {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			p := e.P()
			if _, err := p.Add(ctx, args("c1", e.Pod(0), "net1", e.Conf(0, nil))); err != nil {
				t.Fatal(err)
			}
			d := args("c1", e.Pod(0), "net1", delConf(e))
			if _, err := p.Add(ctx, d); err == nil {
				t.Fatal("ADD accepted the configuration DEL is tested with")
			}
			must(t, p.Del(ctx, d))
			must(t, p.Del(ctx, d)) // and again
			e.Pristine()
		})
	}
}

// checkInfiniBandRules: a GUID on an Ethernet VF is refused before
// anything changes; with ibKubernetesEnabled, ADD waits (code 11) until
// ib-kubernetes marks the pod configured, and a VF needs a GUID.
func checkInfiniBandRules(e vfEnv) {
	t := e.T()
	cases := []struct {
		name  string
		extra map[string]any
		code  uint
	}{
		{"GUID on an Ethernet VF", map[string]any{"args": map[string]any{"cni": map[string]any{"guid": "02:00:00:00:00:00:00:11"}}}, types.ErrInvalidNetworkConfig},
		{"ib-kubernetes not done", map[string]any{"ibKubernetesEnabled": true}, types.ErrTryAgainLater},
		{"ib-kubernetes done, no GUID", map[string]any{"ibKubernetesEnabled": true,
			"args": map[string]any{"cni": map[string]any{"mellanox.infiniband.app": "configured"}}}, types.ErrInvalidNetworkConfig},
	}
	for _, tc := range cases {
		_, err := e.P().Add(ctx, args("c1", e.Pod(0), "net1", e.Conf(0, with(tc.extra, "rdma", false))))
		if code := ToCNIError(err).Code; code != tc.code {
			t.Errorf("%s: code %d (%v), want %d", tc.name, code, err, tc.code)
		}
	}
	e.Pristine()
}

// ipoibView reports one host netdev with an IPoIB address (20 bytes,
// ending with the GUID 0a:0b:0c:0d:0e:0f:10:11), so the plugin takes its
// VF for an InfiniBand one; every call still goes to Ops.
type ipoibView struct {
	netops.Ops
	dev string
}

func (v ipoibView) Link(ctx context.Context, ns, name string) (netops.Link, error) {
	l, err := v.Ops.Link(ctx, ns, name)
	if err == nil && ns == netops.Host && name == v.dev {
		l.MAC, _ = net.ParseMAC("00:00:10:49:fe:80:00:00:00:00:00:00:0a:0b:0c:0d:0e:0f:10:11")
	}
	return l, err
}

// refusesGUIDs answers SetVFGUID as igb does.
type refusesGUIDs struct{ netops.Ops }

func (refusesGUIDs) SetVFGUID(_ context.Context, pf string, vf int, _ net.HardwareAddr) error {
	return fmt.Errorf("setting GUID of VF %d through PF %s: node GUID: %w", vf, pf, syscall.EOPNOTSUPP)
}

// checkGUIDRefusedByTheDriver: the VF's driver refuses GUIDs ("operation
// not supported", igb's answer): ADD fails with the kernel's answer, rolls
// back cleanly (no attempt to restore a GUID that was never set keeps the
// record) and DEL has nothing left to do. o is e.Ops() seen through
// ipoibView, over a driver that refuses GUIDs.
func checkGUIDRefusedByTheDriver(e vfEnv, o netops.Ops) {
	t := e.T()
	p := e.P()
	p.Ops = o
	conf := e.Conf(0, map[string]any{"mac": nil, "vlan": nil, "vlanQoS": nil, "spoofchk": nil, "trust": nil,
		"link_state": nil, "min_tx_rate": nil, "max_tx_rate": nil, "rdma": false,
		"capabilities":  map[string]bool{"infinibandGUID": true},
		"runtimeConfig": map[string]any{"infinibandGUID": "02:00:00:00:00:00:00:11"}})
	a := args("c1", e.Pod(0), "net1", conf)
	_, err := p.Add(ctx, a)
	if err == nil || !strings.Contains(err.Error(), "operation not supported") || !strings.Contains(err.Error(), "GUID") ||
		strings.Contains(err.Error(), "record kept") {
		t.Fatalf("ADD with a GUID the driver refuses: %v, want the kernel's answer and a clean rollback", err)
	}
	if recs, err := (state.Store{Dir: e.StateDir()}).List(); err != nil || len(recs) != 0 {
		t.Fatalf("records after the rollback: %v %v", recs, err)
	}
	must(t, p.Del(ctx, a))
	e.Pristine()
}

// checkConcurrentAddDelOnOneDeviceNeverShare: c1's DEL races c2's ADD of
// the same VF; the VF is never in both pods, and a losing ADD says try
// again later and leaves nothing.
func checkConcurrentAddDelOnOneDeviceNeverShare(e vfEnv, rounds int) {
	t := e.T()
	a1 := args("c1", e.Pod(0), "net1", e.Conf(0, nil))
	a2 := args("c2", e.Pod(1), "net1", e.Conf(0, nil))
	for i := range rounds {
		if _, err := e.P().Add(ctx, a1); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		var delErr, addErr error
		wg.Add(2)
		go func() { defer wg.Done(); delErr = e.P().Del(ctx, a1) }()
		go func() { defer wg.Done(); _, addErr = e.P().Add(ctx, a2) }()
		wg.Wait()
		if delErr != nil {
			t.Fatalf("round %d: DEL: %v", i, delErr)
		}
		in1, in2 := e.InPod(e.Pod(0), "net1"), e.InPod(e.Pod(1), "net1")
		if in1 {
			t.Fatalf("round %d: device still in pod 0 after its DEL", i)
		}
		if addErr != nil {
			if Code(addErr) != types.ErrTryAgainLater {
				t.Fatalf("round %d: ADD failed with code %d: %v", i, Code(addErr), addErr)
			}
			if in2 {
				t.Fatalf("round %d: failed ADD left the device in pod 1", i)
			}
		} else if !in2 {
			t.Fatalf("round %d: ADD succeeded but the device is not in pod 1", i)
		}
		t.Logf("round %d: ADD %v", i, addErr)
		must(t, e.P().Del(ctx, a2))
		e.Pristine()
	}
}

// checkGCReleasesOnlyInvalidAttachments: GC with c2 as the only valid
// attachment releases c1's VF and keeps c2's.
func checkGCReleasesOnlyInvalidAttachments(e vfEnv) {
	t := e.T()
	p := e.P()
	if _, err := p.Add(ctx, args("c1", e.Pod(0), "net1", e.Conf(0, nil))); err != nil {
		t.Fatal(err)
	}
	a2 := args("c2", e.Pod(1), "net1", e.Conf(1, nil))
	if _, err := p.Add(ctx, a2); err != nil {
		t.Fatal(err)
	}
	gc := e.Conf(0, map[string]any{"deviceID": nil, "cni.dev/valid-attachments": []map[string]string{{"containerID": "c2", "ifname": "net1"}}})
	must(t, p.GC(ctx, args("", "", "", gc)))
	if err := p.Check(ctx, a2); err != nil {
		t.Fatalf("valid attachment after GC: %v", err)
	}
	if !e.InPod(e.Pod(1), "net1") {
		t.Fatal("GC released a valid attachment")
	}
	if _, err := (state.Store{Dir: e.StateDir()}).Get(e.PCI(1)); err != nil {
		t.Fatalf("GC removed a valid record: %v", err)
	}
	must(t, p.Del(ctx, a2))
	e.Pristine()
	if !strings.Contains(fmt.Sprint(e.IPAM().calls), "GC fake-ipam") {
		t.Errorf("IPAM GC not delegated: %v", e.IPAM().calls)
	}
}
