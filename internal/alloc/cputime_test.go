//go:build linux

package alloc

import (
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// threadCPU returns the calling thread's CPU time (lock the goroutine to
// its thread around a measurement).
func threadCPU(tb testing.TB) time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ts.Nano())
}
