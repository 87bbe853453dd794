package cni

import (
	"bytes"
	"log/slog"
	"net"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/railyard-io/railyard/internal/cni/state"
	"github.com/railyard-io/railyard/internal/cni/sysfstest"
	"github.com/railyard-io/railyard/internal/containerdev"
)

// gidTree writes, in a fake sysfs tree at root, the GID table of port 1
// of dev: the link-local v1/v2 pair at 0/1, then, from index first, the
// v1/v2 pair of each address, tied to ndev.
func gidTree(t *testing.T, root, dev, ndev string, first int, addrs ...string) {
	t.Helper()
	tree := sysfstest.Tree{Root: root}
	ll := net.ParseIP("fe80::200:ff:fe00:1")
	must(t, tree.AddGID(dev, 0, ll, "IB/RoCE v1", ndev))
	must(t, tree.AddGID(dev, 1, ll, "RoCE v2", ndev))
	for i, a := range addrs {
		must(t, tree.AddGID(dev, first+2*i, net.ParseIP(a), "IB/RoCE v1", ndev))
		must(t, tree.AddGID(dev, first+2*i+1, net.ParseIP(a), containerdev.RoCEv2, ndev))
	}
}

func loggedPlugin(w *world) (*Plugin, *bytes.Buffer) {
	var log bytes.Buffer
	p := w.plugin()
	p.Log = slog.New(slog.NewTextHandler(&log, nil))
	return p, &log
}

func recordOf(t *testing.T, w *world, key string) *state.Record {
	t.Helper()
	rec, err := (state.Store{Dir: w.stateDir}).Get(key)
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// TestAddRecordsTheRoCEGIDIndexInThePodFakeRDMA: with the RDMA devices
// moved into the pod (rdma: true), ADD reads their GID tables through a
// sysfs of the pod's namespace (here a fake tree standing for it) and
// records the RoCE v2 index of each interface's address; the second
// rail's index differs (its netdev had another address first), and ADD
// warns, naming both indexes and the fix, without failing.
func TestAddRecordsTheRoCEGIDIndexInThePodFakeRDMA(t *testing.T) {
	w := newWorld(t)
	podSys := t.TempDir()
	gidTree(t, podSys, "mlx5_3", "net1", 2, "192.168.50.10")
	gidTree(t, podSys, "mlx5_4", "net2", 2, "10.99.0.1", "192.168.50.11")
	w.ops.SetSysfs(pod1, podSys)
	p, log := loggedPlugin(w)
	if _, err := p.Add(ctx, args("c1", pod1, "net1", w.conf(vfPCI, nil))); err != nil {
		t.Fatal(err)
	}
	want := &containerdev.HCAGID{HCA: "mlx5_3", Netdev: "net1", Addr: "192.168.50.10", Port: 1, Index: 3}
	if diff := cmp.Diff(want, recordOf(t, w, vfPCI).GID); diff != "" {
		t.Errorf("net1's GID (-want +got):\n%s", diff)
	}
	if strings.Contains(log.String(), "level=WARN") {
		t.Errorf("warnings after the first rail:\n%s", log)
	}
	if _, err := p.Add(ctx, args("c1", pod1, "net2", w.conf(vf2PCI, map[string]any{"mac": "02:bb:00:00:00:02"}))); err != nil {
		t.Fatal(err)
	}
	if g := recordOf(t, w, vf2PCI).GID; g == nil || g.Index != 5 {
		t.Errorf("net2's GID %+v, want index 5", g)
	}
	for _, s := range []string{"RoCE GID indexes differ", "mlx5_3=3,mlx5_4=5", "leave NCCL_IB_GID_INDEX unset"} {
		if !strings.Contains(log.String(), s) {
			t.Errorf("log lacks %q:\n%s", s, log)
		}
	}
}

// TestAddWarnsWithoutARoCEGIDFakeRDMA: a GID table without the address
// (the RDMA device in another namespace than the netdev, a port down) is
// a warning with the fix, and ADD succeeds without a GID; a pod whose
// sysfs cannot be had, the same.
func TestAddWarnsWithoutARoCEGIDFakeRDMA(t *testing.T) {
	w := newWorld(t)
	podSys := t.TempDir()
	gidTree(t, podSys, "mlx5_3", "net1", 2)
	w.ops.SetSysfs(pod1, podSys)
	p, log := loggedPlugin(w)
	a := args("c1", pod1, "net1", w.conf(vfPCI, nil))
	if _, err := p.Add(ctx, a); err != nil {
		t.Fatal(err)
	}
	if g := recordOf(t, w, vfPCI).GID; g != nil {
		t.Errorf("GID %+v, want none", g)
	}
	if !strings.Contains(log.String(), "no RoCE v2 GID") || !strings.Contains(log.String(), "exclusive netns mode") {
		t.Errorf("log lacks the warning and its fix:\n%s", log)
	}
	must(t, p.Del(ctx, a))

	w2 := newWorld(t) // no sysfs for the pod
	p2, log2 := loggedPlugin(w2)
	if _, err := p2.Add(ctx, args("c1", pod1, "net1", w2.conf(vfPCI, nil))); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log2.String(), "GID table cannot be read") {
		t.Errorf("log lacks the unreadable table:\n%s", log2)
	}
}

// TestAddReadsTheHostsGIDTableInSharedModeFakeVF: without rdma (the RDMA
// device stays in the host's namespace, shared netns mode) the GID table
// is the host sysfs's.
func TestAddReadsTheHostsGIDTableInSharedModeFakeVF(t *testing.T) {
	w := newWorld(t)
	gidTree(t, w.sysfs, "mlx5_3", "net1", 2, "192.168.50.10")
	if _, err := w.plugin().Add(ctx, args("c1", pod1, "net1", w.conf(vfPCI, map[string]any{"rdma": false}))); err != nil {
		t.Fatal(err)
	}
	if g := recordOf(t, w, vfPCI).GID; g == nil || g.Index != 3 || g.HCA != "mlx5_3" {
		t.Errorf("GID %+v, want mlx5_3's index 3", g)
	}
}
