package statetest

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// ReadOnly makes dir read-only until the test ends, with a read-only bind
// mount of dir onto itself (permission bits do not stop root). It skips
// the test when not root or when the bind mount is refused (no mount
// permission, as in a container without CAP_SYS_ADMIN).
//
// Once the bind mount has succeeded, a failed read-only remount fails the
// test rather than skipping it: mounting is permitted by then, so the
// failure is a broken environment or a bug, and a skip would quietly drop
// the read-only tests. (internal/binding's copy of this helper failed;
// this package's skipped; the stricter one is kept.)
func ReadOnly(t *testing.T, dir string) {
	t.Helper()
	if euid := os.Geteuid(); euid != 0 {
		t.Skipf("needs root for a read-only bind mount of %s (euid %d)", dir, euid)
	}
	if err := unix.Mount(dir, dir, "", unix.MS_BIND, ""); err != nil {
		t.Skipf("cannot bind-mount %s onto itself (mount not permitted here?): %v", dir, err)
	}
	t.Cleanup(func() { _ = unix.Unmount(dir, unix.MNT_DETACH) })
	if err := unix.Mount("", dir, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY, ""); err != nil {
		t.Fatalf("remount the bind mount of %s read-only: %v", dir, err)
	}
}

// FullTmpfs mounts a 1 MiB tmpfs on dir (created if missing) until the
// test ends, makes the directories subdirs in it (empty, for the code
// under test to find), and fills it: every write then fails with ENOSPC.
// It skips the test when not root or when the mount is refused.
func FullTmpfs(t *testing.T, dir string, subdirs ...string) {
	t.Helper()
	if euid := os.Geteuid(); euid != 0 {
		t.Skipf("needs root to mount a tmpfs on %s (euid %d)", dir, euid)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=1m"); err != nil {
		t.Skipf("cannot mount a tmpfs on %s (mount not permitted here?): %v", dir, err)
	}
	t.Cleanup(func() { _ = unix.Unmount(dir, unix.MNT_DETACH) })
	for _, sub := range subdirs {
		if err := os.Mkdir(filepath.Join(dir, sub), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	f, err := os.Create(filepath.Join(dir, "fill"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	for {
		if _, err := f.Write(buf); err != nil {
			if !errors.Is(err, unix.ENOSPC) {
				t.Fatalf("filling the tmpfs on %s: %v", dir, err)
			}
			return
		}
	}
}
