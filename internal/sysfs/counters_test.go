package sysfs

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseCounter(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]uint64{
		"0\n": 0, "4242": 4242, " 17 \n": 17,
		"18446744073709551615\n": math.MaxUint64, // %llu of a 64-bit counter at its top
	} {
		got, err := ParseCounter(in)
		if err != nil || got != want {
			t.Errorf("ParseCounter(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "\n", "-1", "+1", "0x10", "1e3", "12 34", "N/A", "18446744073709551616", "1_000"} {
		if got, err := ParseCounter(bad); err == nil || !errors.Is(err, ErrBadCounter) {
			t.Errorf("ParseCounter(%q) = %d, %v; want ErrBadCounter", bad, got, err)
		}
	}
}

func FuzzParseCounter(f *testing.F) {
	for _, s := range []string{"0\n", "4294967295\n", "18446744073709551615", "-1", "", " 7 ", "0x1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := ParseCounter(s)
		if err != nil {
			if !errors.Is(err, ErrBadCounter) {
				t.Fatalf("ParseCounter(%q): error %v is not ErrBadCounter", s, err)
			}
			return
		}
		// Whatever parsed prints back as the same number.
		if back, err := ParseCounter(strconv.FormatUint(v, 10)); err != nil || back != v {
			t.Fatalf("ParseCounter(%q) = %d, which reads back as %d, %v", s, v, back, err)
		}
	})
}

// writePort writes class/infiniband/<dev>/ports/1/<dir>/<name> files.
func writePort(t *testing.T, root, dev string, dir CounterDir, files map[string]string) {
	t.Helper()
	d := filepath.Join(root, "class/infiniband", dev, "ports/1", string(dir))
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, v := range files {
		if err := os.WriteFile(filepath.Join(d, name), []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestPortCounters(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	writePort(t, root, "mlx5_0", PMACounters, map[string]string{"port_xmit_data": "123456789\n", "symbol_error": "0\n", "port_rcv_data": "garbage\n"})
	writePort(t, root, "mlx5_0", HWCounters, map[string]string{"out_of_buffer": "7\n", "lifespan": "10\n"})
	fs := New(root)

	names, err := fs.PortCounterNames("mlx5_0", 1, HWCounters)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"out_of_buffer"}, names); diff != "" {
		t.Errorf("hw_counters names (-want +got):\n%s", diff)
	}
	names, err = fs.PortCounterNames("mlx5_0", 1, PMACounters)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"port_rcv_data", "port_xmit_data", "symbol_error"}, names); diff != "" {
		t.Errorf("counters names (-want +got):\n%s", diff)
	}
	if names, err := fs.PortCounterNames("mlx5_0", 2, PMACounters); err != nil || len(names) != 0 {
		t.Errorf("a port without counters: %v, %v; want none", names, err)
	}

	if v, err := fs.PortCounter("mlx5_0", 1, PMACounters, "port_xmit_data"); err != nil || v != 123456789 {
		t.Errorf("port_xmit_data = %d, %v", v, err)
	}
	if v, err := fs.PortCounter("mlx5_0", 1, HWCounters, "out_of_buffer"); err != nil || v != 7 {
		t.Errorf("out_of_buffer = %d, %v", v, err)
	}
	if _, err := fs.PortCounter("mlx5_0", 1, PMACounters, "port_rcv_data"); !errors.Is(err, ErrBadCounter) {
		t.Errorf("garbage counter: %v, want ErrBadCounter", err)
	}
	if _, err := fs.PortCounter("mlx5_0", 1, PMACounters, "link_downed"); !errors.Is(err, ErrNotFound) {
		t.Errorf("missing counter: %v, want ErrNotFound", err)
	}
}

// Names that would leave the port's counter directory, and directories
// that are not counter directories, are refused before any file is opened.
func TestPortCounterRefusesNamesOutsideThePort(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	writePort(t, root, "mlx5_0", PMACounters, map[string]string{"port_xmit_data": "1\n"})
	if err := os.WriteFile(filepath.Join(root, "class/infiniband/mlx5_0/ports/1/state"), []byte("4: ACTIVE\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fs := New(root)
	for _, c := range []struct {
		rdma string
		port int
		dir  CounterDir
		name string
	}{
		{"mlx5_0", 1, PMACounters, "../state"},
		{"mlx5_0", 1, PMACounters, ".."},
		{"mlx5_0", 1, PMACounters, ""},
		{"mlx5_0", 1, HWCounters, "lifespan"},
		{"mlx5_0", 1, "..", "state"},
		{"mlx5_0", 1, "", "state"},
		{"../mlx5_0", 1, PMACounters, "port_xmit_data"},
		{"..", 1, PMACounters, "port_xmit_data"},
		{"mlx5_0", 0, PMACounters, "port_xmit_data"},
		{"mlx5_0", -1, PMACounters, "port_xmit_data"},
	} {
		if v, err := fs.PortCounter(c.rdma, c.port, c.dir, c.name); err == nil {
			t.Errorf("PortCounter(%q, %d, %q, %q) = %d, want an error", c.rdma, c.port, c.dir, c.name, v)
		}
	}
	if _, err := fs.PortCounterNames("mlx5_0", 1, ".."); err == nil {
		t.Error(`PortCounterNames(dir "..") listed the port directory`)
	}
}

// A counter that is a FIFO fails at once (it would block a scrape for
// ever), as every attribute read does.
func TestPortCounterFIFODoesNotBlock(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	writePort(t, root, "mlx5_0", PMACounters, nil)
	if err := syscall.Mkfifo(filepath.Join(root, "class/infiniband/mlx5_0/ports/1/counters/port_xmit_data"), 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	if _, err := New(root).PortCounter("mlx5_0", 1, PMACounters, "port_xmit_data"); !errors.Is(err, ErrNotRegular) {
		t.Errorf("FIFO counter: %v, want ErrNotRegular", err)
	}
}
