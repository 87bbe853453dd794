package agent

import (
	"context"
	"testing"

	"github.com/railyard-io/railyard/internal/discovery"
	"github.com/railyard-io/railyard/internal/fakesysfs"
	"github.com/railyard-io/railyard/internal/sysfs"
)

// The port poll notices a port whose state file changed, without any file
// event (real sysfs raises none for attribute changes).
func TestPortChangedReadsStateFiles(t *testing.T) {
	e := newEnv(t, "dgx-1", 2)
	topo, err := discovery.Discover(context.Background(), e.sysfs)
	if err != nil {
		t.Fatal(err)
	}
	fs := sysfs.New(e.sysfs)
	if port, changed := portChanged(fs, topo); changed {
		t.Fatalf("unchanged tree reported %s as changed", port)
	}
	vf := topo.NICs[2].VFs[1].RDMA
	if err := fakesysfs.SetPortState(e.sysfs, vf, 1, fakesysfs.PortDown); err != nil {
		t.Fatal(err)
	}
	if port, changed := portChanged(fs, topo); !changed || port != vf+"/1" {
		t.Fatalf("after %s went DOWN: port %q, changed %v", vf, port, changed)
	}
	// After rediscovery the model matches the files again.
	topo, err = discovery.Discover(context.Background(), e.sysfs)
	if err != nil {
		t.Fatal(err)
	}
	if port, changed := portChanged(fs, topo); changed {
		t.Fatalf("rediscovered tree reported %s as changed", port)
	}
	if port, changed := portChanged(fs, nil); changed {
		t.Fatalf("no model reported %s", port)
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
	fs := sysfs.New(dir)
	for b.Loop() {
		if port, changed := portChanged(fs, topo); changed {
			b.Fatalf("%s changed", port)
		}
	}
}
