package fakesysfs

import (
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/railyard-io/railyard/internal/sysfs"
)

func counter(t *testing.T, root, rdma string, dir sysfs.CounterDir, name string) uint64 {
	t.Helper()
	v, err := sysfs.New(root).PortCounter(rdma, 1, dir, name)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestWriteCountersPerDriver(t *testing.T) {
	t.Parallel()
	root := smallTree(t)
	for rdma, d := range map[string]CounterDriver{"mlx5_0": MLX5, "mlx5_1": PMALegacy, "mlx5_2": RXE} {
		if err := WriteCounters(root, rdma, d); err != nil {
			t.Fatal(err)
		}
	}
	fs := sysfs.New(root)
	names := func(rdma string, dir sysfs.CounterDir) int {
		n, err := fs.PortCounterNames(rdma, 1, dir)
		if err != nil {
			t.Fatal(err)
		}
		return len(n)
	}
	got := map[string][2]int{}
	for _, rdma := range []string{"mlx5_0", "mlx5_1", "mlx5_2"} {
		got[rdma] = [2]int{names(rdma, sysfs.PMACounters), names(rdma, sysfs.HWCounters)}
	}
	want := map[string][2]int{
		"mlx5_0": {13 + 8, 26 + 5}, // PMA errors and extended traffic; Q and congestion counters
		"mlx5_1": {13 + 4, 0},      // legacy PMA: 32-bit traffic, no hw_counters
		"mlx5_2": {0, 15},          // rxe: hw_counters only
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("counter files per port [counters, hw_counters] (-want +got):\n%s", diff)
	}
	if err := WriteCounters(root, "mlx5_0", "nope"); err == nil {
		t.Error("an unknown driver wrote counters")
	}
	if err := WriteCounters(root, "../mlx5_0", MLX5); err == nil {
		t.Error("a device name with a separator wrote counters")
	}
}

// Counters advance and wrap at the kernel's width for their file and
// driver: 16-bit symbol_error, 32-bit legacy port_xmit_data and mlx5 Q
// counters, 64-bit extended data counters.
func TestAdvanceCountersWrapsAtTheKernelsWidth(t *testing.T) {
	t.Parallel()
	root := smallTree(t)
	if err := WriteCounters(root, "mlx5_0", MLX5); err != nil {
		t.Fatal(err)
	}
	if err := WriteCounters(root, "mlx5_1", PMALegacy); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		rdma string
		d    CounterDriver
		key  string
		set  uint64
		by   uint64
		want uint64
	}{
		{"mlx5_0", MLX5, "counters/symbol_error", 65534, 3, 1},
		{"mlx5_0", MLX5, "counters/link_downed", 255, 1, 0},
		{"mlx5_0", MLX5, "counters/local_link_integrity_errors", 14, 3, 1},
		{"mlx5_0", MLX5, "counters/port_xmit_data", math.MaxUint32, 10, math.MaxUint32 + 10},
		{"mlx5_0", MLX5, "counters/port_rcv_data", math.MaxUint64 - 1, 3, 1},
		{"mlx5_0", MLX5, "hw_counters/out_of_buffer", math.MaxUint32, 2, 1},
		{"mlx5_0", MLX5, "hw_counters/np_cnp_sent", math.MaxUint32, 2, math.MaxUint32 + 2},
		{"mlx5_1", PMALegacy, "counters/port_xmit_data", math.MaxUint32 - 4, 10, 5},
	}
	for _, s := range steps {
		if err := SetCounter(root, s.rdma, 1, s.key, s.set); err != nil {
			t.Fatal(err)
		}
		if err := AdvanceCounters(root, s.rdma, 1, s.d, map[string]uint64{s.key: s.by}); err != nil {
			t.Fatal(err)
		}
		dir, name := splitKey(s.key)
		if got := counter(t, root, s.rdma, dir, name); got != s.want {
			t.Errorf("%s %s: %d + %d = %d, want %d", s.rdma, s.key, s.set, s.by, got, s.want)
		}
	}
	if err := AdvanceCounters(root, "mlx5_0", 1, MLX5, map[string]uint64{"hw_counters/sent_pkts": 1}); err == nil {
		t.Error("advanced an rxe counter on an mlx5 device")
	}
	if err := SetCounter(root, "mlx5_0", 1, "../state", 1); err == nil {
		t.Error("SetCounter wrote the port's state")
	}
}

func TestResetCounters(t *testing.T) {
	t.Parallel()
	root := smallTree(t)
	if err := WriteCounters(root, "mlx5_0", MLX5); err != nil {
		t.Fatal(err)
	}
	if err := AdvanceCounters(root, "mlx5_0", 1, MLX5, map[string]uint64{"counters/port_xmit_data": 100, "hw_counters/np_cnp_sent": 7}); err != nil {
		t.Fatal(err)
	}
	if err := ResetCounters(root, "mlx5_0", 1); err != nil {
		t.Fatal(err)
	}
	got := []uint64{
		counter(t, root, "mlx5_0", sysfs.PMACounters, "port_xmit_data"),
		counter(t, root, "mlx5_0", sysfs.HWCounters, "np_cnp_sent"),
	}
	if diff := cmp.Diff([]uint64{0, 0}, got); diff != "" {
		t.Errorf("after a reset (-want +got):\n%s", diff)
	}
	if s, err := sysfs.New(root).ReadString("class/infiniband/mlx5_0/ports/1/hw_counters/lifespan"); err != nil || s != "10" {
		t.Errorf("lifespan after a reset: %q, %v; want 10", s, err)
	}
}

func splitKey(key string) (sysfs.CounterDir, string) {
	for i := range key {
		if key[i] == '/' {
			return sysfs.CounterDir(key[:i]), key[i+1:]
		}
	}
	return "", key
}
