package statetest

import (
	"os"
	"syscall"
	"testing"
)

// ReadOnly makes dir read-only for the rest of the test with a read-only
// bind mount of itself (root bypasses permission bits); it skips the test
// where it cannot mount.
func ReadOnly(t *testing.T, dir string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root for a read-only bind mount")
	}
	if err := syscall.Mount(dir, dir, "", syscall.MS_BIND, ""); err != nil {
		t.Skipf("bind mount: %v", err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(dir, syscall.MNT_DETACH) })
	if err := syscall.Mount("", dir, "", syscall.MS_BIND|syscall.MS_REMOUNT|syscall.MS_RDONLY, ""); err != nil {
		t.Skipf("read-only remount: %v", err)
	}
}
