package state

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/railyard-io/railyard/internal/atomicfile"
)

// Stage writes the first record of an attachment in two steps, so that its
// fsyncs can run while the kernel moves the device. When Stage returns,
// the record is in place whole (written to a temporary file, renamed over
// the path): every reader, and a DEL after this process dies, finds it.
// It is durable once the returned durable has returned nil: the file, then
// the directory, fsynced (what Put does before it returns). durable must be
// called (it also closes the file); it may be called from several
// goroutines: the first call runs it, the others wait for its result, so
// `go durable()` starts it and a later durable() waits for it.
//
// ADD stages its record before it changes anything and waits for durable
// before the first change that outlives a power loss: the IPAM
// allocation, the device-info file, the DRA status record, the next Put.
// In between it changes only kernel state (VF settings, names, the
// namespace move: about 20 ms the fsyncs now overlap), which a power loss
// resets. A power loss in that window leaves the record absent, whole, or
// empty or cut (renamed before its data reached the disk), and the device
// back on the host after the reboot: an empty or cut record does not
// decode (ErrCorrupt) and, its device being free on the host, ADD, DEL and
// GC remove it, as they remove a whole one from another boot. From durable
// on, what is on disk is what Put leaves; ADD replaces it with Advance.
func (s Store) Stage(r *Record) (durable func() error, err error) {
	if !ValidKey(r.Key) {
		return nil, fmt.Errorf("invalid device key %q", r.Key)
	}
	dir := filepath.Join(s.Dir, "devices")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating state directory: %w", err)
	}
	b, err := json.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("encoding record of %s: %w", r.Key, err)
	}
	path := s.recordPath(r.Key)
	// ".<name><digits>", as atomicfile names its temporary files.
	f, err := os.CreateTemp(dir, "."+filepath.Base(path))
	if err != nil {
		return nil, fmt.Errorf("writing record of %s: %w", r.Key, err)
	}
	fail := func(err error) (func() error, error) {
		f.Close()
		os.Remove(f.Name())
		return nil, fmt.Errorf("writing record of %s: %w", r.Key, err)
	}
	if _, err := f.Write(b); err != nil {
		return fail(err)
	}
	if err := f.Chmod(0o600); err != nil {
		return fail(err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return fail(err)
	}
	return sync.OnceValue(func() error {
		err := f.Sync()
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = atomicfile.SyncDir(dir)
		}
		if err != nil {
			return fmt.Errorf("making record of %s durable: %w", r.Key, err)
		}
		return nil
	}), nil
}
