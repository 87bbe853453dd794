package fakesysfs

import (
	"os"
	"path/filepath"
)

// MkdirTemp creates a directory for a fake tree. It prefers /dev/shm: like
// the real sysfs that tree lives in memory, and generating thousands of VFs
// on a journaling disk file system is many times slower.
func MkdirTemp() (string, error) {
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		if dir, err := os.MkdirTemp("/dev/shm", "railyard-sysfs-"); err == nil {
			return dir, nil
		}
	}
	return os.MkdirTemp("", "railyard-sysfs-")
}

// Cleanup removes a tree made by MkdirTemp; it refuses anything that is not
// one, so a wrong argument cannot delete unrelated files.
func Cleanup(dir string) error {
	if matched, _ := filepath.Match("railyard-sysfs-*", filepath.Base(dir)); !matched {
		return os.ErrInvalid
	}
	return os.RemoveAll(dir)
}
