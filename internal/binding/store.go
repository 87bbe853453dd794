package binding

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/railyard-io/railyard/internal/atomicfile"
	"github.com/railyard-io/railyard/internal/inputfile"
	"github.com/railyard-io/railyard/internal/topology"
)

// Files of a store directory.
const (
	lockFile     = "lock"
	viewFile     = "view.json"
	bindingsFile = "bindings.json"
	tempPrefix   = ".railyard-binding-"
	tempSuffix   = ".tmp" // never .json: a CDI registry ignores the file
)

// bindingsVersion is the version of bindings.json.
const bindingsVersion = 1

// maxFileBytes bounds view.json and bindings.json when read: a large node's
// view is a few hundred KiB, its bindings less.
const maxFileBytes = 32 << 20

// DefaultLockTimeout bounds the wait for the store's lock.
const DefaultLockTimeout = 10 * time.Second

// ErrNoView is returned (wrapped) when the agent has not published a view
// yet: nothing can be bound.
var ErrNoView = errors.New("binding: no node view published by railyard-agent yet")

// ErrCorrupt is returned (wrapped) when bindings.json breaks an invariant
// (a device or token bound twice): nothing is bound until it is repaired.
var ErrCorrupt = errors.New("binding: bindings file is inconsistent")

// PodRef names a pod. UID is "" when the binder did not know it
// (PodResources does not give it; railyard-cni has it from CNI_ARGS).
type PodRef struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	UID       string `json:"uid,omitempty"`
}

func (p PodRef) String() string { return p.Namespace + "/" + p.Name }

// Same reports whether p and o are the same pod: same namespace and name,
// and the same UID when both are known.
func (p PodRef) Same(o PodRef) bool {
	return p.Namespace == o.Namespace && p.Name == o.Name && (p.UID == "" || o.UID == "" || p.UID == o.UID)
}

// Binding ties one token of a pool to one physical device.
type Binding struct {
	Resource string `json:"resource"`
	Token    string `json:"token"`
	Device   string `json:"device"`
	Pod      PodRef `json:"pod"`
	// Container is the container holding the token (PodResources).
	Container string `json:"container,omitempty"`
	// Sandbox is the CNI container ID of the sandbox that bound or last
	// confirmed the binding; "" when the agent bound it. CNI DEL of that
	// sandbox releases it.
	Sandbox string `json:"sandbox,omitempty"`
	// By is "cni" or "agent".
	By string `json:"by"`
	// GPUs are the PCI addresses of the GPUs the binding served; Class the
	// device's best distance class to them ("" without GPUs).
	GPUs  []string `json:"gpus,omitempty"`
	Class string   `json:"class,omitempty"`
	// At is when the binding was made, on the wall clock (for people);
	// Boot on the boot's clock, which orders it (clock.go).
	At   time.Time `json:"at"`
	Boot *BootTime `json:"boot,omitempty"`
}

type bindingsDoc struct {
	Version  int       `json:"version"`
	Bindings []Binding `json:"bindings"`
}

// Options configure a Store. The zero value is the production setting.
type Options struct {
	// Now is the wall clock (nil: time.Now).
	Now func() time.Time
	// Boot is the boot's clock, which orders bindings and lists (nil:
	// SystemBootTime, or with Now set none: a test's wall clock then
	// orders them alone).
	Boot func() BootTime
	// LockTimeout bounds the wait for the lock (0: DefaultLockTimeout).
	LockTimeout time.Duration
	// Fault, when set, is called before every step that changes a file
	// (see the Step constants); an error stops the change right there,
	// with no clean-up, as a process dying at that point would. Tests
	// use it to crash a change at every step.
	Fault func(step string) error
}

// Steps of a change, in order, as passed to Options.Fault.
const (
	StepLock         = "lock"
	StepRemoveSpec   = "remove-spec"   // a released token's CDI spec and device-info file
	StepWriteTemp    = "write-temp"    // bindings.json's temporary file
	StepSyncTemp     = "sync-temp"     // fsync of that file
	StepRename       = "rename"        // the commit point
	StepSyncDir      = "sync-dir"      // fsync of the directory
	StepWriteSpec    = "write-spec"    // a bound token's CDI spec
	StepWriteDevInfo = "write-devinfo" // a bound token's device-info file
	StepPublishView  = "publish-view"  // view.json
	StepRemoveStrays = "remove-strays" // Reconcile: files with no binding
)

// Store is a binding store directory. Its methods are safe for concurrent
// use by goroutines and processes: every change holds an exclusive flock.
type Store struct {
	dir string
	opt Options

	mu     sync.Mutex
	raw    []byte             // view.json as last parsed
	parsed *View              // its parse
	topo   *topology.Topology // its topology, built on first use
}

// NewStore returns the store in dir (created on first change).
func NewStore(dir string, opt Options) *Store {
	if opt.Boot == nil {
		opt.Boot = SystemBootTime
		if opt.Now != nil {
			opt.Boot = func() BootTime { return BootTime{} }
		}
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	if opt.LockTimeout == 0 {
		opt.LockTimeout = DefaultLockTimeout
	}
	return &Store{dir: dir, opt: opt}
}

// Dir returns the store's directory.
func (s *Store) Dir() string { return s.dir }

func (s *Store) fault(step string) error {
	if s.opt.Fault == nil {
		return nil
	}
	if err := s.opt.Fault(step); err != nil {
		return fmt.Errorf("binding store: %s: %w", step, err)
	}
	return nil
}

// lock takes the store's exclusive flock, polling until ctx ends or the
// lock timeout passes. The kernel drops it if the process dies.
func (s *Store) lock(ctx context.Context) (func(), error) {
	if err := s.fault(StepLock); err != nil {
		return nil, err
	}
	f, err := s.openLock()
	if err != nil {
		return nil, fmt.Errorf("binding store: %w", err)
	}
	deadline := time.Now().Add(s.opt.LockTimeout)
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			return func() {
				_ = unix.Flock(int(f.Fd()), unix.LOCK_UN)
				f.Close()
			}, nil
		}
		if !errors.Is(err, unix.EWOULDBLOCK) && !errors.Is(err, unix.EINTR) {
			f.Close()
			return nil, fmt.Errorf("binding store: locking: %w", err)
		}
		if time.Now().After(deadline) {
			f.Close()
			return nil, fmt.Errorf("binding store: locked by another process for %s: %w", s.opt.LockTimeout, context.DeadlineExceeded)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("binding store: waiting for the lock: %w", ctx.Err())
		case <-time.After(2 * time.Millisecond):
		}
	}
}

// openLock opens the lock file read-only (flock needs no write access),
// creating it and the directory only when missing: a change that writes
// nothing (a container restart's PreStartContainer of bound tokens) works
// on a read-only state directory.
func (s *Store) openLock() (*os.File, error) {
	p := filepath.Join(s.dir, lockFile)
	f, err := os.OpenFile(p, os.O_RDONLY|unix.O_CLOEXEC, 0)
	if !errors.Is(err, os.ErrNotExist) {
		return f, err
	}
	if err := os.MkdirAll(s.dir, 0o755); err != nil {
		return nil, err
	}
	return os.OpenFile(p, os.O_CREATE|os.O_RDONLY|unix.O_CLOEXEC, 0o600)
}

// View reads the published view (without the lock: it is replaced
// atomically). It is read as a regular file of bounded size: a FIFO or a
// device there fails at once.
func (s *Store) View() (*View, error) {
	b, err := inputfile.Read(filepath.Join(s.dir, viewFile), maxFileBytes)
	if errors.Is(err, os.ErrNotExist) {
		return nil, s.noView()
	}
	if err != nil {
		return nil, fmt.Errorf("binding store: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.parsed != nil && bytes.Equal(b, s.raw) {
		return s.parsed, nil
	}
	var v View
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, fmt.Errorf("binding store: %s: %w", viewFile, err)
	}
	if err := v.check(); err != nil {
		return nil, fmt.Errorf("binding store: %s: %w", viewFile, err)
	}
	s.raw, s.parsed, s.topo = b, &v, nil
	return &v, nil
}

// noView is ErrNoView, with the likely reason when the store's file
// system is full: "not published yet" alone reads like a start-up race.
func (s *Store) noView() error {
	var st unix.Statfs_t
	if unix.Statfs(s.dir, &st) == nil && st.Blocks > 0 && st.Bavail == 0 {
		return fmt.Errorf("%w: %s is full, so the agent cannot write it: %w", ErrNoView, s.dir, unix.ENOSPC)
	}
	return ErrNoView
}

// topology returns v's topology, built once per view this store read
// (the agent binds many pods against one view).
func (s *Store) topology(v *View) *topology.Topology {
	s.mu.Lock()
	defer s.mu.Unlock()
	if v == s.parsed {
		if s.topo == nil {
			s.topo = v.Topology()
		}
		return s.topo
	}
	return v.Topology()
}

// Bindings reads the bindings, sorted by resource and token (without the
// lock: the file is replaced atomically).
func (s *Store) Bindings() ([]Binding, error) {
	b, err := inputfile.Read(filepath.Join(s.dir, bindingsFile), maxFileBytes)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("binding store: %w", err)
	}
	var doc bindingsDoc
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrCorrupt, bindingsFile, err)
	}
	if doc.Version != bindingsVersion {
		return nil, fmt.Errorf("%w: %s version %d, want %d", ErrCorrupt, bindingsFile, doc.Version, bindingsVersion)
	}
	if err := checkBindings(doc.Bindings); err != nil {
		return nil, err
	}
	return doc.Bindings, nil
}

// checkBindings enforces the invariants: every token parses, no token and
// no device is bound twice.
func checkBindings(bs []Binding) error {
	tokens := make(map[string]bool, len(bs))
	devices := make(map[string]string, len(bs))
	for _, b := range bs {
		if _, err := ParseToken(b.Token); err != nil {
			return fmt.Errorf("%w: %w", ErrCorrupt, err)
		}
		if b.Device == "" {
			return fmt.Errorf("%w: token %s bound to no device", ErrCorrupt, b.Token)
		}
		if tokens[b.Token] {
			return fmt.Errorf("%w: token %s bound twice", ErrCorrupt, b.Token)
		}
		tokens[b.Token] = true
		if other, dup := devices[b.Device]; dup {
			return fmt.Errorf("%w: device %s bound to %s and %s", ErrCorrupt, b.Device, other, b.Token)
		}
		devices[b.Device] = b.Token
	}
	return nil
}

// Publish replaces the view. The agent calls it when its topology or pools
// change; bindings of devices that left the view are kept (their pods
// still hold them) until released.
func (s *Store) Publish(ctx context.Context, v View) error {
	v.Version = viewVersion
	for i := range v.Pools {
		p := &v.Pools[i]
		p.Tag = PoolTag(p.Resource)
		slices.SortFunc(p.Devices, func(a, b Device) int { return strings.Compare(a.ID, b.ID) })
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("binding store: encoding view: %w", err)
	}
	if old, err := inputfile.Read(filepath.Join(s.dir, viewFile), maxFileBytes); err == nil && string(old) == string(b) {
		return nil
	}
	unlock, err := s.lock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	if err := s.fault(StepPublishView); err != nil {
		return err
	}
	return s.writeAtomic(s.dir, filepath.Join(s.dir, viewFile), b, false)
}

// writeBindings commits bs: temporary file, fsync, rename (the commit
// point), directory fsync.
func (s *Store) writeBindings(bs []Binding) error {
	slices.SortFunc(bs, func(a, b Binding) int {
		if c := strings.Compare(a.Resource, b.Resource); c != 0 {
			return c
		}
		return strings.Compare(a.Token, b.Token)
	})
	b, err := json.MarshalIndent(bindingsDoc{Version: bindingsVersion, Bindings: bs}, "", " ")
	if err != nil {
		return fmt.Errorf("binding store: encoding bindings: %w", err)
	}
	return s.writeAtomic(s.dir, filepath.Join(s.dir, bindingsFile), b, true)
}

// writeAtomic writes path through a temporary file in dir. With durable,
// the file and the directory are fsynced, so the change survives a power
// loss as well as a process death.
func (s *Store) writeAtomic(dir, path string, b []byte, durable bool) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("binding store: %w", err)
	}
	if err := s.fault(StepWriteTemp); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, tempPrefix+"*"+tempSuffix)
	if err != nil {
		return fmt.Errorf("binding store: %w", err)
	}
	committed := false
	defer func() {
		if !committed {
			os.Remove(tmp.Name())
		}
	}()
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return fmt.Errorf("binding store: writing %s: %w", path, err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return fmt.Errorf("binding store: writing %s: %w", path, err)
	}
	if durable {
		if err := s.fault(StepSyncTemp); err != nil {
			committed = true // a dying process removes nothing
			tmp.Close()
			return err
		}
		if err := tmp.Sync(); err != nil {
			tmp.Close()
			return fmt.Errorf("binding store: syncing %s: %w", path, err)
		}
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("binding store: writing %s: %w", path, err)
	}
	if durable {
		if err := s.fault(StepRename); err != nil {
			committed = true
			return err
		}
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("binding store: committing %s: %w", path, err)
	}
	committed = true
	if !durable {
		return nil
	}
	if err := s.fault(StepSyncDir); err != nil {
		return err
	}
	if err := atomicfile.SyncDir(dir); err != nil {
		return fmt.Errorf("binding store: %w", err)
	}
	return nil
}
