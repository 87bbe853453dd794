package draplugin_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	resourceapi "k8s.io/api/resource/v1"

	"github.com/railyard-io/railyard/internal/dra"
	"github.com/railyard-io/railyard/internal/draplugin"
	"github.com/railyard-io/railyard/internal/fakesysfs"
)

// Rediscovery republishes: a port going DOWN takes its PF's VFs out of
// the slices, removed VFs leave them, an unchanged topology publishes
// nothing new, and a port coming back publishes its VFs again.
func TestRediscoveryRepublishesHealthChanges(t *testing.T) {
	n := newNode(t, "dgx-h100", 2)
	ctx := context.Background()
	d := n.driver(t)
	rec := record(t, d)
	res, calls := rec.last()
	all := published(res, node+"/rdma-vf")
	if calls != 1 || len(all) != 24 || !all["pci-0000-18-00-1"] || !all["pci-0000-40-00-2"] {
		t.Fatalf("first publish: %d calls, %d devices", calls, len(all))
	}
	if _, err := d.Update(ctx, n.topo(t)); err != nil {
		t.Fatal(err)
	}
	if _, calls := rec.last(); calls != 1 {
		t.Errorf("an unchanged topology was published again (%d calls)", calls)
	}
	step := func(what string, change func() error, want func(map[string]bool) bool) {
		t.Helper()
		if err := change(); err != nil {
			t.Fatal(err)
		}
		if _, err := d.Update(ctx, n.topo(t)); err != nil {
			t.Fatal(err)
		}
		res, _ := rec.last()
		if got := published(res, node+"/rdma-vf"); !want(got) {
			t.Errorf("%s: published %d devices: %v", what, len(got), got)
		}
	}
	step("mlx5_0 port DOWN", func() error { return fakesysfs.SetPortState(n.sysfs, "mlx5_0", 1, fakesysfs.PortDown) },
		func(got map[string]bool) bool {
			return len(got) == 22 && !got["pci-0000-18-00-1"] && !got["pci-0000-18-00-2"]
		})
	step("VFs of 0000:40:00.0 removed", func() error { return fakesysfs.RemoveVFs(n.sysfs, "0000:40:00.0") },
		func(got map[string]bool) bool {
			return len(got) == 20 && !got["pci-0000-40-00-1"] && !got["pci-0000-40-00-2"]
		})
	step("mlx5_0 port ACTIVE again", func() error { return fakesysfs.SetPortState(n.sysfs, "mlx5_0", 1, fakesysfs.PortActive) },
		func(got map[string]bool) bool { return len(got) == 22 && got["pci-0000-18-00-1"] })
}

// The leaves the agent learns from its Node (SetLeaves) are published as
// each NIC's railyard.io/leaf: a change republishes, the same leaves do
// not, a rediscovery keeps them, nil takes them off again.
func TestSetLeavesRepublishesTheLeafAttribute(t *testing.T) {
	n := newNode(t, "dgx-h100", 2)
	ctx := context.Background()
	d := n.driver(t)
	rec := record(t, d)
	leafOf := func(dev string) (string, int) {
		t.Helper()
		res, calls := rec.last()
		for _, s := range res.Pools[node+"/rdma-vf"].Slices {
			for _, dv := range s.Devices {
				if dv.Name == dev {
					if a, ok := dv.Attributes[dra.AttrLeaf]; ok && a.StringValue != nil {
						return *a.StringValue, calls
					}
					return "", calls
				}
			}
		}
		t.Fatalf("%s not published", dev)
		return "", 0
	}
	check := func(what, dev, want string, wantCalls int) {
		t.Helper()
		if got, calls := leafOf(dev); got != want || calls != wantCalls {
			t.Errorf("%s: %s leaf %q after %d publishes, want %q after %d", what, dev, got, calls, want, wantCalls)
		}
	}
	check("before", "pci-0000-18-00-1", "", 1)
	set := func(leaves map[string]string, wantChanged bool) {
		t.Helper()
		changed, err := d.SetLeaves(ctx, leaves)
		if err != nil {
			t.Fatal(err)
		}
		if changed != wantChanged {
			t.Errorf("SetLeaves(%v) changed %v, want %v", leaves, changed, wantChanged)
		}
	}
	set(map[string]string{"mlx5_0": "leaf-r0"}, true) // the PF of 0000:18:00.1
	check("leaves set", "pci-0000-18-00-1", "leaf-r0", 2)
	check("leaves set", "pci-0000-40-00-1", "", 2)
	set(map[string]string{"mlx5_0": "leaf-r0"}, false)
	check("the same leaves", "pci-0000-18-00-1", "leaf-r0", 2)
	if _, err := d.Update(ctx, n.topo(t)); err != nil {
		t.Fatal(err)
	}
	check("rediscovery", "pci-0000-18-00-1", "leaf-r0", 2)
	set(nil, true)
	check("leaves cleared", "pci-0000-18-00-1", "", 3)
}

// A prepared VF whose RDMA device left the host's view (it lives in the
// pod's netns) stays published as it was, also after a restart: the
// checkpoint carries what was published (dra.Options.Prepared).
func TestHeldDeviceStaysPublishedAcrossRestart(t *testing.T) {
	n := newNode(t, "dgx-h100", 2)
	ctx := context.Background()
	d := n.driver(t)
	c := claim(t, uidA, nic("0000:18:00.1", "nic0"))
	if res, _ := d.PrepareResourceClaims(ctx, []*resourceapi.ResourceClaim{c}); res[c.UID].Err != nil {
		t.Fatal(res[c.UID].Err)
	}
	// What an exclusive-mode netns move leaves in the host's sysfs: the
	// VF without its infiniband/ and infiniband_verbs/ entries.
	for _, sub := range []string{"infiniband", "infiniband_verbs"} {
		if err := os.RemoveAll(filepath.Join(n.sysfs, "bus/pci/devices/0000:18:00.1", sub)); err != nil {
			t.Fatal(err)
		}
	}
	restarted := n.driver(t)
	rec := record(t, restarted)
	res, _ := rec.last()
	if !published(res, node+"/rdma-vf")["pci-0000-18-00-1"] {
		t.Fatalf("the held VF is not published after the restart")
	}
	pools := restarted.Pools()
	if len(pools) != 1 || strings.Join(pools[0].Held, ",") != "0000:18:00.1" {
		t.Errorf("Held = %v, want the prepared VF", pools[0].Held)
	}
	// Prepare again after the restart (the kubelet may ask): same answer,
	// from the checkpoint, though sysfs no longer shows the verbs device.
	res2, _ := restarted.PrepareResourceClaims(ctx, []*resourceapi.ResourceClaim{c})
	if err := res2[c.UID].Err; err != nil {
		t.Fatal(err)
	}
	if nodes := n.spec(t, c.UID).Devices[0].ContainerEdits.DeviceNodes; len(nodes) != 2 || nodes[0].Path != "/dev/infiniband/uverbs14" {
		t.Errorf("spec after restart: %+v", nodes)
	}
}

// A checkpoint that cannot be trusted stops the driver (starting empty
// would hand held devices out again); the stray temporary file of a
// write that died is removed.
func TestCheckpointRefusesCorruption(t *testing.T) {
	n := newNode(t, "dgx-h100", 1)
	d := n.driver(t)
	c := claim(t, uidA, nic("0000:18:00.1", "nic0"))
	if res, _ := d.PrepareResourceClaims(context.Background(), []*resourceapi.ResourceClaim{c}); res[c.UID].Err != nil {
		t.Fatal(res[c.UID].Err)
	}
	stray := filepath.Join(n.state, "."+draplugin.CheckpointFile+"123") // what renameio leaves when the process dies
	if err := os.WriteFile(stray, []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	n.driver(t)
	if _, err := os.Stat(stray); !os.IsNotExist(err) {
		t.Errorf("stray temporary file kept: %v", err)
	}
	path := filepath.Join(n.state, draplugin.CheckpointFile)
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{
		"truncated":      string(good[:len(good)/2]),
		"other version":  `{"version": 2, "claims": []}`,
		"unknown field":  `{"version": 1, "claims": [], "x": 1}`,
		"duplicate UID":  `{"version": 1, "claims": [{"uid": "a"}, {"uid": "a"}]}`,
		"path in UID":    `{"version": 1, "claims": [{"uid": "../a"}]}`,
		"null claim":     `{"version": 1, "claims": [null]}`,
		"trailing bytes": string(good) + "}",
		"duplicate key":  `{"version": 1, "version": 1, "claims": []}`,
		"miscased key":   `{"version": 1, "Claims": []}`,
	} {
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := draplugin.New(draplugin.Config{NodeName: node, Pools: n.pools, DevRoot: n.dev, CDISpecDir: n.cdi, StateDir: n.state})
		if err == nil || !strings.Contains(err.Error(), "checkpoint") {
			t.Errorf("%s: New = %v, want a checkpoint error", name, err)
		}
	}
}

// FuzzCheckpoint: whatever the state directory holds, New never panics,
// and a checkpoint it accepts restores claims Unprepare can remove.
func FuzzCheckpoint(f *testing.F) {
	f.Add([]byte(`{"version": 1, "claims": [{"namespace": "ns", "name": "c", "uid": "u-1", "devices": [{"pci": "0000:18:00.1", "nodes": ["uverbs1"], "rail": 0}]}]}`))
	f.Add([]byte(`{"version": 1, "claims": []}`))
	f.Add([]byte(`{"version": 1, "claims": [{"uid": ""}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, draplugin.CheckpointFile), b, 0o644); err != nil {
			t.Fatal(err)
		}
		d, err := draplugin.New(draplugin.Config{NodeName: node, CDISpecDir: filepath.Join(dir, "cdi"), StateDir: dir})
		if err != nil {
			return
		}
		for uid := range d.Prepared() {
			if strings.ContainsAny(string(uid), "/.") {
				t.Fatalf("accepted UID %q", uid)
			}
		}
	})
}
