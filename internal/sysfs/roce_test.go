package sysfs

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestGIDNetdev(t *testing.T) {
	root := t.TempDir()
	base := filepath.Join(root, "bus/pci/devices/0000:13:00.1/infiniband/vmw_pvrdma0/ports")
	for _, p := range []string{"1/gid_attrs/ndevs", "2/gid_attrs/ndevs"} {
		if err := os.MkdirAll(filepath.Join(base, p), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// Port 1 has only an empty entry (an unused GID); port 2 names the netdev.
	if err := os.WriteFile(filepath.Join(base, "1/gid_attrs/ndevs/0"), []byte("\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(base, "2/gid_attrs/ndevs/1"), []byte("ens224\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fs := New(root)
	if got, err := fs.GIDNetdev("0000:13:00.1", "vmw_pvrdma0"); err != nil || got != "ens224" {
		t.Errorf("GIDNetdev = %q, %v; want ens224", got, err)
	}
	if _, err := fs.GIDNetdev("0000:13:00.1", "mlx5_0"); !errors.Is(err, ErrNotFound) {
		t.Errorf("GIDNetdev of a missing device: %v, want ErrNotFound", err)
	}
}
