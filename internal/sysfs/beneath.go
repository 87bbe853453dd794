package sysfs

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// ErrOutsideRoot is returned (wrapped) for a path whose resolution would
// leave the tree's root: an absolute symlink anywhere on the way, or a
// relative one with more ".." than it is deep. A real /sys has neither; a
// captured or hand-made tree that has one is not followed out of it (a
// replayed tree's link to /etc/os-release is never read).
var ErrOutsideRoot = errors.New("resolves outside the sysfs root")

// beneath is how symlinks are resolved below a root: every component of
// the path, symlinks included, must stay below the root, and absolute
// symlinks are refused, as os.Root does. openat2's RESOLVE_BENEATH has the
// kernel do it in one call; os.Root does it component by component where
// openat2 is missing (Linux before 5.6, or a seccomp profile refusing it).
type beneath int

const (
	// auto: openat2, else os.Root (FS's zero value).
	auto beneath = iota
	byOpenat2
	byOSRoot
)

// noOpenat2 is set once openat2 is found missing: later opens go straight
// to os.Root. Never set by tests, which pick the way in FS.way.
var noOpenat2 atomic.Bool

// openAt opens rel (relative to the root) with flags, resolving every
// symlink on the way within the root. It returns a raw file descriptor,
// close-on-exec, which the caller closes. With O_PATH, use O_DIRECTORY
// too: os.Root does not follow a final symlink for an O_PATH open of
// anything else.
func (f FS) openAt(rel string, flags int) (int, error) {
	full := filepath.Join(f.Root, rel)
	rel = filepath.Clean(rel)
	if !filepath.IsLocal(rel) && rel != "." {
		return -1, &fs.PathError{Op: "open", Path: full, Err: ErrOutsideRoot}
	}
	way := f.way
	if way == auto && noOpenat2.Load() {
		way = byOSRoot
	}
	if way != byOSRoot {
		fd, err := f.openat2(rel, flags)
		switch {
		case err == nil:
			return fd, nil
		case errors.Is(err, unix.EXDEV):
			return -1, &fs.PathError{Op: "open", Path: full, Err: ErrOutsideRoot}
		case way == auto && (errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EPERM)):
			noOpenat2.Store(true)
		case way == auto && errors.Is(err, unix.EAGAIN):
			// A rename raced the resolution, again and again: resolve
			// step by step instead.
		default:
			return -1, &fs.PathError{Op: "open", Path: full, Err: err}
		}
	}
	return openInRoot(f.Root, rel, flags, full)
}

// rootDir is a root's directory, opened (O_PATH) at the first read that
// finds it and kept for openat2, shared by the copies of the FS New made:
// a read costs one openat2, not three calls (discovery reads ~40,000
// files on a 2,048-VF node). It is closed when no FS refers to it any
// more. A root that cannot be opened is tried again at the next read.
type rootDir struct {
	path string       // the Root it is for
	fd   atomic.Int64 // the descriptor + 1; 0 until opened
	mu   sync.Mutex   // held while opening
}

// open returns the root's descriptor, opening it at the first call that
// can.
func (d *rootDir) open() (int, error) {
	if v := d.fd.Load(); v != 0 {
		return int(v - 1), nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if v := d.fd.Load(); v != 0 {
		return int(v - 1), nil
	}
	fd, err := retry(func() (int, error) {
		return unix.Open(d.path, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	})
	if err != nil {
		return -1, err
	}
	runtime.AddCleanup(d, func(fd int) { unix.Close(fd) }, fd)
	d.fd.Store(int64(fd) + 1)
	return fd, nil
}

// openat2 opens rel below the root with RESOLVE_BENEATH (and no /proc
// magic links), retrying EINTR and a few EAGAINs (a rename during
// resolution).
func (f FS) openat2(rel string, flags int) (int, error) {
	var rootfd int
	var err error
	if f.dir != nil && f.dir.path == f.Root {
		rootfd, err = f.dir.open()
		defer runtime.KeepAlive(f.dir)
	} else {
		rootfd, err = retry(func() (int, error) {
			return unix.Open(f.Root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		})
		if err == nil {
			defer unix.Close(rootfd)
		}
	}
	if err != nil {
		return -1, err
	}
	how := unix.OpenHow{Flags: uint64(flags | unix.O_CLOEXEC), Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_MAGICLINKS}
	var fd int
	for range 3 {
		fd, err = retry(func() (int, error) { return unix.Openat2(rootfd, rel, &how) })
		if err != unix.EAGAIN {
			break
		}
	}
	return fd, err
}

// openInRoot opens rel below root through os.Root and hands back a
// duplicate of its descriptor.
func openInRoot(root, rel string, flags int, full string) (int, error) {
	r, err := os.OpenRoot(root)
	if err != nil {
		return -1, err
	}
	defer r.Close()
	f, err := r.OpenFile(rel, flags, 0)
	if err != nil {
		err = unwrapPath(err)
		if err.Error() == osRootEscapes {
			err = ErrOutsideRoot
		}
		return -1, &fs.PathError{Op: "open", Path: full, Err: err}
	}
	defer f.Close()
	sc, err := f.SyscallConn()
	if err != nil {
		return -1, err
	}
	fd := -1
	var dupErr error
	if err := sc.Control(func(raw uintptr) {
		fd, dupErr = unix.FcntlInt(raw, unix.F_DUPFD_CLOEXEC, 0)
	}); err != nil {
		return -1, err
	}
	if dupErr != nil {
		return -1, &fs.PathError{Op: "dup", Path: full, Err: dupErr}
	}
	return fd, nil
}

// osRootEscapes is os.Root's error for a path that leaves it (a ".."
// above it, an absolute symlink): it has no exported sentinel
// (TestReadsStayBelowTheRoot holds this spelling).
const osRootEscapes = "path escapes from parent"

// unwrapPath returns a *fs.PathError's own error, so that the caller's
// names the whole path once.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// retry calls open until it fails with something other than EINTR.
func retry(open func() (int, error)) (int, error) {
	for {
		fd, err := open()
		if err != unix.EINTR {
			return fd, err
		}
	}
}

// readlink reads the symlink rel (its directory resolved within
// root; the link itself not followed).
func (f FS) readlink(rel string) (string, error) {
	dfd, base, err := f.openParent(rel)
	if err != nil {
		return "", err
	}
	defer unix.Close(dfd)
	for size := 256; ; size *= 2 {
		buf := make([]byte, size)
		n, err := unix.Readlinkat(dfd, base, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return "", &fs.PathError{Op: "readlink", Path: filepath.Join(f.Root, rel), Err: err}
		}
		if n < size {
			return string(buf[:n]), nil
		}
	}
}

// lstat checks that rel exists (its directory resolved within the root;
// rel itself may be a symlink, not followed).
func (f FS) lstat(rel string) error {
	dfd, base, err := f.openParent(rel)
	if err != nil {
		return err
	}
	defer unix.Close(dfd)
	var st unix.Stat_t
	if err := unix.Fstatat(dfd, base, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return &fs.PathError{Op: "lstat", Path: filepath.Join(f.Root, rel), Err: err}
	}
	return nil
}

// statDir checks that rel is a directory, resolved within the root.
func (f FS) statDir(rel string) error {
	fd, err := f.openAt(rel, unix.O_PATH|unix.O_DIRECTORY)
	if err != nil {
		return err
	}
	return unix.Close(fd)
}

// openParent opens rel's directory within the root and returns it with
// rel's last element.
func (f FS) openParent(rel string) (int, string, error) {
	rel = filepath.Clean(rel)
	dir, base := filepath.Split(rel)
	if base == "." || base == ".." || base == "" {
		return -1, "", &fs.PathError{Op: "open", Path: filepath.Join(f.Root, rel), Err: ErrOutsideRoot}
	}
	if dir == "" {
		dir = "."
	}
	fd, err := f.openAt(dir, unix.O_PATH|unix.O_DIRECTORY)
	return fd, base, err
}
