package state

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// ErrBusy is returned (wrapped) when a device lock is not obtained in time.
var ErrBusy = errors.New("device is busy")

// Lock takes the exclusive lock of device key, waiting up to timeout (0:
// one attempt). The lock is an flock(2) on locks/<key>.lock, so it is
// released by the kernel if the process dies. Call the returned function to
// release it.
func (s Store) Lock(ctx context.Context, key string, timeout time.Duration) (func(), error) {
	if !ValidKey(key) {
		return nil, fmt.Errorf("invalid device key %q", key)
	}
	dir := filepath.Join(s.Dir, "locks")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating lock directory: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(dir, key+".lock"), os.O_CREATE|os.O_RDWR|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening lock of %s: %w", key, err)
	}
	deadline := time.Now().Add(timeout)
	wait := time.Millisecond
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() {
				_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
				_ = f.Close()
			}, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			_ = f.Close()
			return nil, fmt.Errorf("locking %s: %w", key, err)
		}
		if !time.Now().Before(deadline) {
			_ = f.Close()
			return nil, fmt.Errorf("device %s is locked by another CNI operation for more than %s: %w", key, timeout, ErrBusy)
		}
		select {
		case <-ctx.Done():
			_ = f.Close()
			return nil, fmt.Errorf("waiting for lock of %s: %w", key, ctx.Err())
		case <-time.After(wait):
		}
		if wait < 20*time.Millisecond {
			wait *= 2
		}
	}
}
