package atomicfile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/google/renameio/v2"
)

// WriteFile replaces path with b (mode perm), creating its directory. The
// temporary file is ".<name><digits>" in the same directory: never
// "*.json", so a CDI registry watching the directory does not load it
// half-written. RemoveTemps cleans up after a write that died.
func WriteFile(path string, b []byte, perm os.FileMode) error {
	if err := Replace(path, b, perm); err != nil {
		return err
	}
	return SyncDir(filepath.Dir(path))
}

// Replace replaces path with b (mode perm) as WriteFile does, the
// temporary file fsynced before it is renamed over path, but without the
// directory's fsync: after a power loss path holds the old content or the
// new one, whole, never a part, and possibly the old one although Replace
// returned. For a writer whose old content is already durable and serves
// as well after a reboot as the new one.
func Replace(path string, b []byte, perm os.FileMode) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("atomicfile: %w", err)
	}
	if err := renameio.WriteFile(path, b, perm, renameio.WithTempDir(dir), renameio.WithStaticPermissions(perm)); err != nil {
		return fmt.Errorf("atomicfile: writing %s: %w", path, err)
	}
	return nil
}

// Remove removes path durably; a missing file is no error.
func Remove(path string) error {
	if err := os.Remove(path); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("atomicfile: %w", err)
	}
	return SyncDir(filepath.Dir(path))
}

// SyncDir fsyncs a directory, so that renames and removals in it survive
// a power loss.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("atomicfile: syncing %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("atomicfile: syncing %s: %w", dir, err)
	}
	return nil
}

// RemoveTemps removes the temporary files a WriteFile of path that died
// left behind (".<name>" and renameio's digits). What it cannot remove
// stays; the next call tries again.
func RemoveTemps(path string) {
	m, _ := filepath.Glob(filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+"*"))
	for _, f := range m {
		os.Remove(f)
	}
}
