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

func (s Store) lockPath(key string) string {
	return filepath.Join(s.Dir, "locks", key+".lock")
}

// Lock takes the exclusive lock of device key, waiting up to timeout (0:
// one attempt). The lock is an flock(2) on locks/<key>.lock, opened
// read-only (flock needs no write access) and created only when missing,
// so it is released by the kernel if the process dies. Call the returned
// function to release it: a device left without a record then loses its
// lock file too, so locks/ holds only files of devices in use.
func (s Store) Lock(ctx context.Context, key string, timeout time.Duration) (func(), error) {
	if !ValidKey(key) {
		return nil, fmt.Errorf("invalid device key %q", key)
	}
	path := s.lockPath(key)
	deadline := time.Now().Add(timeout)
	for {
		f, err := openLock(path)
		if err != nil {
			return nil, fmt.Errorf("opening lock of %s: %w", key, err)
		}
		if err := waitFlock(ctx, f, key, timeout, deadline); err != nil {
			_ = f.Close()
			return nil, err
		}
		// The holder before us may have removed the file (its device
		// released) after we opened it: the lock then guards nothing, and
		// whoever opens the path now creates another.
		if held, err := f.Stat(); err == nil {
			if now, err := os.Stat(path); err == nil && os.SameFile(held, now) {
				return func() { s.unlock(f, key) }, nil
			}
		}
		_ = f.Close()
	}
}

// openLock opens the lock file read-only, creating it (and its directory)
// only when it is missing.
func openLock(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_CLOEXEC|syscall.O_NOFOLLOW, 0)
	if !errors.Is(err, os.ErrNotExist) {
		return f, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("creating lock directory: %w", err)
	}
	return os.OpenFile(path, os.O_RDONLY|os.O_CREATE|syscall.O_CLOEXEC|syscall.O_NOFOLLOW, 0o600)
}

func waitFlock(ctx context.Context, f *os.File, key string, timeout time.Duration, deadline time.Time) error {
	wait := time.Millisecond
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			return fmt.Errorf("locking %s: %w", key, err)
		}
		if !time.Now().Before(deadline) {
			return fmt.Errorf("device %s is locked by another CNI operation for more than %s: %w", key, timeout, ErrBusy)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for lock of %s: %w", key, ctx.Err())
		case <-time.After(wait):
		}
		if wait < 20*time.Millisecond {
			wait *= 2
		}
	}
}

// unlock releases the lock of key, first removing its file when the device
// has no record (a failed removal, on a read-only directory, only leaves
// the file).
func (s Store) unlock(f *os.File, key string) {
	if _, err := os.Lstat(s.recordPath(key)); errors.Is(err, os.ErrNotExist) {
		_ = os.Remove(s.lockPath(key))
	}
	_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	_ = f.Close()
}

// HasLock reports whether device key has a lock file: a device with
// neither a record nor a lock file has nothing railyard-cni holds.
func (s Store) HasLock(key string) bool {
	if !ValidKey(key) {
		return false
	}
	_, err := os.Lstat(s.lockPath(key))
	return err == nil
}
