package sysfs

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
)

// oneEntryAtATime is a getdents64 that returns one directory entry per
// call, as a filesystem may: ext4 (this machine's /tmp) returned a fake
// PF directory's "net" alone, then its 15 other entries, in the
// nodesetup tests.
func oneEntryAtATime() func(fd int, buf []byte) (int, error) {
	var pending []byte
	return func(fd int, buf []byte) (int, error) {
		if len(pending) == 0 {
			all := make([]byte, 1<<16)
			n, err := syscall.ReadDirent(fd, all)
			if err != nil || n <= 0 {
				return n, err
			}
			pending = all[:n]
		}
		reclen := int(binary.NativeEndian.Uint16(pending[16:18])) // struct linux_dirent64's d_reclen
		n := copy(buf, pending[:reclen])
		pending = pending[reclen:]
		return n, nil
	}
}

// readDirNames lists a directory to its end whatever the filesystem
// returns per getdents call: a short batch is never the end. A listing
// that stopped at the first short batch listed one entry of 20 here.
func TestReadDirNamesReadsToTheEnd(t *testing.T) {
	dir := t.TempDir()
	want := []string{"net"}
	for i := range 19 {
		name := fmt.Sprintf("virtfn%d", i)
		want = append(want, name)
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "net"), 0o755); err != nil {
		t.Fatal(err)
	}
	slices.Sort(want)
	for name, getdents := range map[string]func(int, []byte) (int, error){"getdents64": syscall.ReadDirent, "one entry per call": oneEntryAtATime()} {
		got, err := New(dir).readDirNamesBy(".", getdents)
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("%s: listed %q, want %q", name, got, want)
		}
	}
}
