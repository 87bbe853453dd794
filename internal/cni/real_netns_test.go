//go:build linux

package cni

// Tests in this file run the plugin logic against the real kernel
// (netops.Linux) in real network namespaces, with a veth end standing in
// for a PCI network function (a small fake sysfs maps a PCI address to it).
// IPAM is the in-process fake here; test/cni drives the real binary with
// the real cnitool and host-local.

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/railyard-io/railyard/internal/cni/state"
	"github.com/railyard-io/railyard/internal/cni/sysfstest"
	"github.com/railyard-io/railyard/internal/netops"
	"github.com/railyard-io/railyard/internal/netops/netnstest"
)

const vethPCI = "0000:7f:00.1"

type realWorld struct {
	t        *testing.T
	dev      string
	pod      string
	orig     netops.Link
	sysfs    string
	stateDir string
	ipam     *fakeIPAM
}

func newRealWorld(t *testing.T) *realWorld {
	t.Helper()
	netnstest.Require(t)
	dir := t.TempDir()
	w := &realWorld{t: t, dev: netnstest.Name("vf"), sysfs: filepath.Join(dir, "sys"),
		stateDir: filepath.Join(dir, "state"), ipam: newFakeIPAM()}
	peer := netnstest.NewNetns(t, "peer")
	w.pod = netnstest.NewNetns(t, "pod")
	netnstest.NewVeth(t, w.dev, peer)
	alt := netnstest.Name("alt")
	netnstest.IP(t, "link", "set", w.dev, "mtu", "1400", "address", "02:42:ac:11:00:02", "alias", "host vf")
	netnstest.IP(t, "link", "property", "add", "dev", w.dev, "altname", alt)
	netnstest.IP(t, "link", "set", w.dev, "up")
	tree, err := sysfstest.New(w.sysfs)
	must(t, err)
	must(t, tree.AddNetdev(vethPCI, w.dev))
	w.orig, err = netops.Linux{}.Link(ctx, netops.Host, w.dev)
	must(t, err)
	return w
}

func (w *realWorld) conf() []byte {
	return []byte(fmt.Sprintf(`{"cniVersion":"1.1.0","name":"rdma-net","type":"railyard-cni",
		"deviceID":%q,"mtu":9000,"mac":"02:bb:00:00:00:07","ipam":{"type":"fake-ipam"},
		"stateDir":%q,"sysfsRoot":%q,"lockTimeout":"1s"}`, vethPCI, w.stateDir, w.sysfs))
}

func (w *realWorld) plugin(o netops.Ops) *Plugin {
	return &Plugin{Ops: o, IPAM: w.ipam, BootID: "b", TestRoot: os.TempDir()}
}

func (w *realWorld) args(cid string) Args { return args(cid, w.pod, "net1", w.conf()) }

// assertPristine checks the veth is on the host exactly as created, the pod
// namespace holds only lo, and no record is left.
func (w *realWorld) assertPristine() {
	w.t.Helper()
	l, err := netops.Linux{}.Link(ctx, netops.Host, w.dev)
	if err != nil {
		w.t.Fatalf("device not on the host under %s: %v", w.dev, err)
	}
	o := w.orig
	if l.Name != o.Name || l.Index != o.Index || l.MTU != o.MTU || l.MAC.String() != o.MAC.String() ||
		l.Up != o.Up || l.Alias != o.Alias || !slices.Equal(l.AltNames, o.AltNames) {
		w.t.Errorf("host link %+v MAC %s, want %+v MAC %s", l, l.MAC, o, o.MAC)
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
	if rules, err := (netops.Linux{}).Rules(ctx, w.pod); err != nil || len(rules) != 0 {
		w.t.Errorf("routing rules left in the pod: %v %v", rules, err)
	}
	if n := w.ipam.allocated(); n != 0 {
		w.t.Errorf("%d addresses left", n)
	}
}

func TestRealNetnsAddCheckDelVeth(t *testing.T) {
	w := newRealWorld(t)
	p := w.plugin(netops.Linux{})
	res, err := p.Add(ctx, w.args("c1"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Interfaces[0].PciID != vethPCI || res.Interfaces[0].Mtu != 9000 {
		t.Errorf("result %+v", res.Interfaces[0])
	}
	l, err := netops.Linux{}.Link(ctx, w.pod, "net1")
	if err != nil {
		t.Fatal(err)
	}
	if l.MTU != 9000 || l.MAC.String() != "02:bb:00:00:00:07" || !l.Up || len(l.AltNames) != 0 {
		t.Errorf("pod link %+v", l)
	}
	if _, err := (netops.Linux{}).Link(ctx, netops.Host, w.dev); !errors.Is(err, netops.ErrLinkNotFound) {
		t.Errorf("device still on the host: %v", err)
	}
	if err := p.Check(ctx, w.args("c1")); err != nil {
		t.Fatalf("Check: %v", err)
	}
	must(t, p.Del(ctx, w.args("c1")))
	w.assertPristine()
	must(t, p.Del(ctx, w.args("c1")))
	w.assertPristine()
}

func TestRealNetnsAddRollbackAtEveryStepVeth(t *testing.T) {
	// down, alias, altname, rename, move, rename, MTU, MAC, up, addresses,
	// then multi-rail: arp_ignore, arp_announce, rp_filter, the table's
	// route, the rule.
	checkAddRollbackAtEveryStep(t, newRealWorld, func(w *realWorld) Args { return w.args("c1") }, 15)
}

func TestRealNetnsDelAfterNetnsDeletedVeth(t *testing.T) {
	w := newRealWorld(t)
	p := w.plugin(netops.Linux{})
	if _, err := p.Add(ctx, w.args("c1")); err != nil {
		t.Fatal(err)
	}
	netnstest.IP(t, "netns", "del", filepath.Base(w.pod)) // destroys the veth with it
	must(t, p.Del(ctx, w.args("c1")))
	must(t, p.Del(ctx, w.args("c1")))
	recs, err := state.Store{Dir: w.stateDir}.List()
	if err != nil || len(recs) != 0 {
		t.Fatalf("records left: %v %v", recs, err)
	}
}

// A physical function is returned to the host when its namespace dies; a
// veth is destroyed instead, so the test moves it out first, as the kernel
// would for a VF, then deletes the namespace.
func TestRealNetnsDelAfterSimulatedPhysicalRefundVeth(t *testing.T) {
	w := newRealWorld(t)
	p := w.plugin(netops.Linux{})
	if _, err := p.Add(ctx, w.args("c1")); err != nil {
		t.Fatal(err)
	}
	must(t, netops.Linux{}.MoveLink(ctx, w.pod, "net1", netops.Host))
	netnstest.IP(t, "netns", "del", filepath.Base(w.pod))
	netnstest.IP(t, "netns", "add", filepath.Base(w.pod)) // for assertPristine
	must(t, p.Del(ctx, w.args("c1")))
	w.assertPristine()
}

func TestRealNetnsDelWithRecordRemovedVeth(t *testing.T) {
	w := newRealWorld(t)
	checkDelWithRecordRemoved(t, w, w.args("c1"), w.stateDir, w.dev)
}

// TestDelWithStateDirGoneRestoresLinkVeth: after the state directory
// vanished, DEL gives the netdev back its name, MTU, MAC and up state
// from the alias marker (it came back down, with the pod's MTU). Its
// alias and altnames were only in the record.
func TestDelWithStateDirGoneRestoresLinkVeth(t *testing.T) {
	w := newRealWorld(t)
	lx := netops.Linux{}
	a := w.args("c1")
	if _, err := w.plugin(lx).Add(ctx, a); err != nil {
		t.Fatal(err)
	}
	must(t, os.RemoveAll(w.stateDir))
	if err := w.plugin(lx).Del(ctx, a); err != nil {
		t.Fatal(err)
	}
	l, err := lx.Link(ctx, netops.Host, w.dev)
	if err != nil {
		t.Fatalf("device not back under %s: %v", w.dev, err)
	}
	o := w.orig
	if l.MTU != o.MTU || l.MAC.String() != o.MAC.String() || l.Up != o.Up || l.Index != o.Index {
		t.Errorf("host link MTU %d MAC %s up %v index %d, want MTU %d MAC %s up %v index %d",
			l.MTU, l.MAC, l.Up, l.Index, o.MTU, o.MAC, o.Up, o.Index)
	}
	if strings.HasPrefix(l.Alias, markerPrefix) {
		t.Errorf("marker left as the alias: %q", l.Alias)
	}
	if err := w.plugin(lx).Del(ctx, a); err != nil {
		t.Fatalf("second DEL: %v", err)
	}
}
