package discovery

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/railyard-io/railyard/internal/fakesysfs"
	"github.com/railyard-io/railyard/internal/machine"
)

func dualRail(t testing.TB) *machine.Description {
	t.Helper()
	d, err := fakesysfs.DualRailNode()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestBigNodeShape(t *testing.T) {
	topo := mustDiscover(t, generateDesc(t, dualRail(t), 128))
	vfs := 0
	for _, n := range topo.NICs {
		vfs += len(n.VFs)
	}
	if len(topo.GPUs) != 8 || len(topo.NICs) != 16 || vfs != 2048 {
		t.Fatalf("got %d GPUs, %d PFs, %d VFs; want 8, 16, 2048", len(topo.GPUs), len(topo.NICs), vfs)
	}
	if len(topo.Warnings) != 0 {
		t.Errorf("warnings: %v", topo.Warnings[:min(5, len(topo.Warnings))])
	}
}

// BenchmarkDiscover16PFx128VFs discovers a node with 16 PFs x 128 VFs
// (2048 VFs, ~2100 PCI functions). Goal: under 100 ms per discovery.
func BenchmarkDiscover16PFx128VFs(b *testing.B) {
	root := generateDesc(b, dualRail(b), 128)
	ctx := context.Background()
	// CPU time per discovery is reported too: on a shared, loaded machine
	// it is steadier than wall time.
	start := cpuTime()
	for b.Loop() {
		if _, err := Discover(ctx, root); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64((cpuTime()-start).Milliseconds())/float64(b.N), "cpu-ms/op")
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
