package sysfs

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"

	"golang.org/x/sys/unix"
)

// getdents stops filling its buffer when the calling thread has a signal
// pending (fs/readdir.c's filldir64), on every filesystem: a short batch
// is not the end of a directory, even on sysfs or tmpfs. Go's runtime
// sends SIGURG to preempt goroutines, most often on a loaded machine, and
// a listing that stopped at a short batch lost entries (a PF's VFs in
// internal/nodesetup's tests, 11 counters of a VF in internal/rdmastats',
// under the race detector beside parallel builds). Here the listing
// thread gets SIGURG in a loop while it lists a 300-entry directory on
// tmpfs 500 times: every listing must be whole.
func TestReadDirNamesIsWholeUnderSignals(t *testing.T) {
	dir := t.TempDir()
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		d, err := os.MkdirTemp("/dev/shm", "railyard-readdir-")
		if err == nil {
			dir = d
			t.Cleanup(func() { _ = os.RemoveAll(d) })
		}
	}
	const entries = 300
	for i := range entries {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("counter_%03d", i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	fsys := New(dir)
	tid := make(chan int)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		target := <-tid
		for {
			select {
			case <-stop:
				return
			default:
				_ = unix.Tgkill(os.Getpid(), target, unix.SIGURG) // the runtime's preemption signal: ignored by the program
			}
		}
	})
	defer wg.Wait()
	defer close(stop)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	tid <- unix.Gettid()
	for i := range 500 {
		names, err := fsys.List(".")
		if err != nil {
			t.Fatal(err)
		}
		if len(names) != entries {
			t.Fatalf("listing %d under signals: %d names of %d", i, len(names), entries)
		}
	}
}
