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

// A fake tree whose attributes or device directories are symlinks out of
// the root: every write must fail, naming the escape, and leave the
// outside files as they were. An attribute longer than the value is
// truncated (sysfs ignores O_TRUNC; a regular file needs it).
func TestSRIOVSysfsNeverWritesOutsideItsRootRegularFilesNoKernel(t *testing.T) {
	t.Parallel()
	const pf, vf = "0000:18:00.0", "0000:18:00.2"
	outside := t.TempDir()
	victim := filepath.Join(outside, "victim")
	mkfile := func(t *testing.T, p, content string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	mkfile(t, victim, "keep me\n")
	mkfile(t, filepath.Join(outside, "dev", "driver_override"), "keep me\n")
	for name, tc := range map[string]struct {
		link, target string // link below the root, its target
		call         func(s netops.SRIOVSysfs) error
	}{
		"attribute, relative": {"bus/pci/devices/" + pf + "/sriov_numvfs", "", func(s netops.SRIOVSysfs) error {
			return s.SetNumVFs(context.Background(), pf, 8)
		}},
		"attribute, absolute": {"bus/pci/devices/" + pf + "/sriov_numvfs", victim, func(s netops.SRIOVSysfs) error {
			return s.SetNumVFs(context.Background(), pf, 8)
		}},
		"device directory": {"bus/pci/devices/" + vf, filepath.Join(outside, "dev"), func(s netops.SRIOVSysfs) error {
			return s.Bind(context.Background(), vf, "vfio-pci")
		}},
		"drivers_probe": {"bus/pci/drivers_probe", victim, func(s netops.SRIOVSysfs) error {
			return s.Bind(context.Background(), vf, "vfio-pci")
		}},
	} {
		t.Run(name, func(t *testing.T) {
			root := t.TempDir()
			mkfile(t, filepath.Join(root, "bus/pci/devices", vf, "driver_override"), "")
			mkfile(t, filepath.Join(root, "bus/pci/drivers_probe"), "")
			link := filepath.Join(root, tc.link)
			_ = os.RemoveAll(link)
			if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
				t.Fatal(err)
			}
			target := tc.target
			if target == "" { // relative, through ".."
				rel, err := filepath.Rel(filepath.Dir(link), victim)
				if err != nil {
					t.Fatal(err)
				}
				target = rel
			}
			if err := os.Symlink(target, link); err != nil {
				t.Fatal(err)
			}
			err := tc.call(netops.SRIOVSysfs{Root: root})
			if err == nil || !strings.Contains(err.Error(), "escapes") {
				t.Fatalf("err = %v, want a write refused for escaping the root", err)
			}
			for _, p := range []string{victim, filepath.Join(outside, "dev", "driver_override")} {
				if b, _ := os.ReadFile(p); string(b) != "keep me\n" {
					t.Fatalf("%s outside the root was written: %q", p, b)
				}
			}
		})
	}
	t.Run("truncates", func(t *testing.T) {
		root := t.TempDir()
		p := filepath.Join(root, "bus/pci/devices", pf, "sriov_numvfs")
		mkfile(t, p, "16\n")
		if err := (netops.SRIOVSysfs{Root: root}).SetNumVFs(context.Background(), pf, 8); err != nil {
			t.Fatal(err)
		}
		if b, _ := os.ReadFile(p); string(b) != "8" {
			t.Fatalf("sriov_numvfs = %q, want %q", b, "8")
		}
	})
	t.Run("never creates", func(t *testing.T) {
		root := t.TempDir()
		if err := os.MkdirAll(filepath.Join(root, "bus/pci/devices", pf), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := (netops.SRIOVSysfs{Root: root}).SetNumVFs(context.Background(), pf, 8); err == nil {
			t.Fatal("a missing sriov_numvfs accepted")
		}
		if _, err := os.Lstat(filepath.Join(root, "bus/pci/devices", pf, "sriov_numvfs")); err == nil {
			t.Fatal("sriov_numvfs created")
		}
	})
}
