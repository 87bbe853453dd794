package netops_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/railyard-io/railyard/internal/netops"
)

// On a plain directory the writes land in regular files and no driver
// binds: SRIOVSysfs must write each attribute where the kernel reads it
// and report that the driver did not take the device. The kernel's side
// (VFs appearing, EBUSY) is fakesysfs.Kernel's, tested there.
func TestSRIOVSysfsWritesTheKernelsFilesRegularFilesNoKernel(t *testing.T) {
	root := t.TempDir()
	const pf, vf = "0000:18:00.0", "0000:18:00.2"
	for _, p := range []string{
		"bus/pci/devices/" + pf + "/sriov_numvfs",
		"bus/pci/devices/" + vf + "/driver_override",
		"bus/pci/drivers/mlx5_core/unbind",
		"bus/pci/drivers_probe",
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, p), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("../../drivers/mlx5_core", filepath.Join(root, "bus/pci/devices", vf, "driver")); err != nil {
		t.Fatal(err)
	}
	s, ctx := netops.SRIOVSysfs{Root: root}, context.Background()
	if err := s.SetNumVFs(ctx, pf, 8); err != nil {
		t.Fatal(err)
	}
	err := s.Bind(ctx, vf, "vfio-pci")
	if err == nil || !strings.Contains(err.Error(), "modprobe vfio-pci") {
		t.Fatalf("Bind = %v, want the driver-did-not-bind error", err)
	}
	for p, want := range map[string]string{
		"bus/pci/devices/" + pf + "/sriov_numvfs":    "8",
		"bus/pci/devices/" + vf + "/driver_override": "vfio-pci",
		"bus/pci/drivers/mlx5_core/unbind":           vf,
		"bus/pci/drivers_probe":                      vf,
	} {
		if b, _ := os.ReadFile(filepath.Join(root, p)); string(b) != want {
			t.Errorf("%s = %q, want %q", p, b, want)
		}
	}
	if err := s.SetNumVFs(ctx, "../x", 1); err == nil {
		t.Error("a path as PCI address accepted")
	}
	if err := s.SetNumVFs(ctx, "0000:99:00.0", 1); err == nil {
		t.Error("a missing PF accepted")
	}
}
