package sysfs

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// List must return every entry of large directories with long names, on
// the disk file system and on tmpfs (where fake trees live), although it
// skips the final empty getdents call.
func TestListLargeDirectories(t *testing.T) {
	roots := []string{t.TempDir()}
	if shm, err := os.MkdirTemp("/dev/shm", "railyard-list-"); err == nil {
		t.Cleanup(func() { os.RemoveAll(shm) })
		roots = append(roots, shm)
	}
	for _, root := range roots {
		for _, count := range []int{0, 1, 29, 30, 31, 500, 3000} {
			dir := filepath.Join(root, fmt.Sprint(count))
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			for i := 0; i < count; i++ {
				name := fmt.Sprintf("%05d-%s", i, strings.Repeat("x", i%240))
				if err := os.WriteFile(filepath.Join(dir, name), nil, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			got, err := New(root).List(fmt.Sprint(count))
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != count {
				t.Errorf("%s: List returned %d names, want %d", dir, len(got), count)
			}
			for i, name := range got {
				if !strings.HasPrefix(name, fmt.Sprintf("%05d-", i)) {
					t.Fatalf("%s: entry %d is %q", dir, i, name)
				}
			}
		}
	}
	if got, err := New(roots[0]).List("missing"); err != nil || got != nil {
		t.Errorf("missing dir: %v, %v; want nil, nil", got, err)
	}
}

// Functions in PCI domains wider than four hex digits (Intel VMD) are PCI
// devices like any other, listed in numeric order (after domain ffff);
// names that are not canonical addresses are not PCI devices.
func TestPCIDevicesWideDomains(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "bus/pci/devices")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"0000:00:0e.0", "10000:00:02.0", "10000:01:00.0", "ffff:00:01.0", "not-a-device", "0000:00:0E.0", "00000000:00:0f.0"} {
		if err := os.WriteFile(filepath.Join(dir, n), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := New(root).PCIDevices()
	if err != nil {
		t.Fatal(err)
	}
	if want := "[0000:00:0e.0 ffff:00:01.0 10000:00:02.0 10000:01:00.0]"; fmt.Sprint(got) != want {
		t.Errorf("PCIDevices = %v, want %s", got, want)
	}
}
