package discovery_test

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"github.com/railyard-io/railyard/internal/discovery"
	"github.com/railyard-io/railyard/internal/fakesysfs"
	"github.com/railyard-io/railyard/internal/topology"
	"github.com/railyard-io/railyard/machines"
)

// The port poll notices a port whose state file changed, without any file
// event (real sysfs raises none for attribute changes).
func TestChangedPortReadsStateFiles(t *testing.T) {
	root := t.TempDir()
	if err := machines.WriteSysfs("dgx-1", root, 2); err != nil {
		t.Fatal(err)
	}
	topo := discover(t, root)
	if port, changed := discovery.ChangedPort(root, topo); changed {
		t.Fatalf("unchanged tree reported %s as changed", port)
	}
	vf := topo.NICs[2].VFs[1].RDMA
	if err := fakesysfs.SetPortState(root, vf, 1, fakesysfs.PortDown); err != nil {
		t.Fatal(err)
	}
	if port, changed := discovery.ChangedPort(root, topo); !changed || port != vf+"/1" {
		t.Fatalf("after %s went DOWN: port %q, changed %v", vf, port, changed)
	}
	// After rediscovery the model matches the files again.
	topo = discover(t, root)
	if port, changed := discovery.ChangedPort(root, topo); changed {
		t.Fatalf("rediscovered tree reported %s as changed", port)
	}
	if port, changed := discovery.ChangedPort(root, nil); changed {
		t.Fatalf("no model reported %s", port)
	}
}

func TestWatchPaths(t *testing.T) {
	root := t.TempDir()
	if err := machines.WriteSysfs("dgx-1", root, 1); err != nil {
		t.Fatal(err)
	}
	topo := discover(t, root)
	paths := discovery.WatchPaths(root, topo)
	for _, want := range []string{
		filepath.Join(root, "bus/pci/devices"),
		filepath.Join(root, "class/infiniband", topo.NICs[0].RDMA, "ports/1"),
		filepath.Join(root, "class/infiniband", topo.NICs[0].VFs[0].RDMA, "ports/1"),
	} {
		if !slices.Contains(paths, want) {
			t.Errorf("WatchPaths lacks %s", want)
		}
	}
	if got := discovery.WatchPaths(root, nil); len(got) != 3 {
		t.Errorf("WatchPaths without a model = %v, want the 3 device lists", got)
	}
}

// BenchmarkPortPoll2048 measures one poll of the dual-rail node's 2064
// ports (16 PFs + 2048 VFs), the agent's cost every portPollInterval.
func BenchmarkPortPoll2048(b *testing.B) {
	d, err := fakesysfs.DualRailNode()
	if err != nil {
		b.Fatal(err)
	}
	dir, err := fakesysfs.MkdirTemp()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = fakesysfs.Cleanup(dir) })
	if err := fakesysfs.Generate(dir, d, fakesysfs.Options{VFsPerPF: 128}); err != nil {
		b.Fatal(err)
	}
	topo, err := discovery.Discover(context.Background(), dir)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if port, changed := discovery.ChangedPort(dir, topo); changed {
			b.Fatalf("%s changed", port)
		}
	}
}

func discover(t *testing.T, root string) *topology.Topology {
	t.Helper()
	topo, err := discovery.Discover(context.Background(), root)
	if err != nil {
		t.Fatal(err)
	}
	return topo
}
