package capture

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/railyard-io/railyard/internal/discovery"
	"github.com/railyard-io/railyard/internal/doctor"
	"github.com/railyard-io/railyard/internal/inputfile"
	"github.com/railyard-io/railyard/internal/sysfs"
)

// Bounds of one capture. A DGX with 8 NICs of 127 VFs reads ~40 000
// sysfs paths of a few bytes each.
const (
	MaxEntries = 1 << 18
	MaxBytes   = 64 << 20
	// maxHostFile is what doctor reads of one host file.
	maxHostFile = 1 << 20
)

// ErrTooLarge is returned (wrapped) when a capture passes MaxEntries or
// MaxBytes.
var ErrTooLarge = errors.New("capture too large")

// Directories of the tarball: --sysfs DIR/sys, --host-root DIR/host.
const (
	SysDir  = "sys"
	HostDir = "host"
)

// Recorder collects the paths readers touch, for one tree.
type Recorder struct {
	mu    sync.Mutex
	paths map[string]struct{}
}

// Record implements sysfs.Recorder.
func (r *Recorder) Record(p string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.paths == nil {
		r.paths = map[string]struct{}{}
	}
	r.paths[p] = struct{}{}
}

func (r *Recorder) sorted() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, 0, len(r.paths))
	for p := range r.paths {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

// Options say where the node's trees are.
type Options struct {
	SysfsRoot string // "" = /sys
	HostRoot  string // "" = /
	// Root says whether doctor may read what only root can (PCI config
	// space), as `railyard doctor` run by the same user would.
	Root bool
	// DCB reads RoCE NICs' DCB (netops.Linux on a node) so that doctor
	// goes on to read their ecn/ files; what it answers is not stored.
	DCB doctor.DCBReader
}

// Stats says what a capture holds.
type Stats struct {
	Files, Dirs, Symlinks int
	Bytes                 int64
	// Unreadable counts files a reader touched that could not be read
	// now (permissions, gone): they are not stored.
	Unreadable int
}

// Node runs discovery and every doctor check on the node with recorders
// and writes what they read to w as a gzipped tarball.
func Node(ctx context.Context, w io.Writer, opt Options) (Stats, error) {
	sys, host := &Recorder{}, &Recorder{}
	sysRoot, hostRoot := opt.SysfsRoot, opt.HostRoot
	if sysRoot == "" {
		sysRoot = "/sys"
	}
	if hostRoot == "" {
		hostRoot = "/"
	}
	if _, err := (discovery.Options{Recorder: sys}).Discover(ctx, sysRoot); err != nil {
		return Stats{}, err
	}
	if _, err := doctor.Run(ctx, doctor.Options{SysfsRoot: sysRoot, Host: doctor.HostFiles{Root: hostRoot, Recorder: host}, Root: opt.Root, DCB: opt.DCB, Recorder: sys}); err != nil {
		return Stats{}, err
	}
	return Write(w, []Tree{{Dir: SysDir, Root: sysRoot, Rec: sys, ListDirs: true, Beneath: true}, {Dir: HostDir, Root: hostRoot, Rec: host, Filter: hostFilter}})
}

// Tree is one recorded tree to store.
type Tree struct {
	Dir  string // its directory in the tarball
	Root string
	Rec  *Recorder
	// ListDirs stores the entries of a recorded directory (sysfs readers
	// list directories; doctor's host files are read or globbed).
	ListDirs bool
	// Filter, when set, says whether to store a file and what of it.
	Filter func(p string, content []byte) ([]byte, bool)
	// Beneath says symlinks resolve below Root as sysfs.FS reads them:
	// an absolute one leaves the tree (and is not stored). Otherwise an
	// absolute symlink is relative to Root, as a host's are to its /.
	Beneath bool
}

// hostFilter keeps secrets out: no process's environment or command line,
// and of the kernel command line only the IOMMU parameters doctor's iommu
// check reads (it could hold passwords or keys).
func hostFilter(p string, content []byte) ([]byte, bool) {
	if m, _ := path.Match("/proc/*/*", p); m {
		if b := path.Base(p); b == "environ" || b == "cmdline" {
			return nil, false
		}
	}
	if p == "/proc/cmdline" {
		var keep []string
		for _, f := range strings.Fields(string(content)) {
			if strings.Contains(f, "iommu") {
				keep = append(keep, f)
			}
		}
		return []byte(strings.Join(keep, " ") + "\n"), true
	}
	return content, true
}

// Write stores the recorded paths of each tree below its Dir, within
// MaxEntries and MaxBytes.
func Write(w io.Writer, trees []Tree) (Stats, error) {
	return write(w, trees, limits{entries: MaxEntries, bytes: MaxBytes})
}

// limits bound one capture.
type limits struct {
	entries int
	bytes   int64
}

func write(w io.Writer, trees []Tree, lim limits) (Stats, error) {
	zw := gzip.NewWriter(w)
	tw := tar.NewWriter(zw)
	wr := &writer{tw: tw, done: map[string]bool{}, lim: lim}
	for _, t := range trees {
		wr.tree = t
		for _, p := range t.Rec.sorted() {
			if err := wr.store(strings.TrimPrefix(filepath.Clean("/"+p), "/"), 0); err != nil {
				return wr.st, err
			}
		}
	}
	if err := tw.Close(); err != nil {
		return wr.st, err
	}
	return wr.st, zw.Close()
}

type writer struct {
	tw   *tar.Writer
	tree Tree
	done map[string]bool // tarball names written
	st   Stats
	lim  limits
}

// maxLinks bounds the symlinks followed for one path, as the kernel's
// ELOOP does.
const maxLinks = 40

// store writes rel (relative to the tree's root) and every symlink and
// directory on the way to it, following symlinks within the tree as the
// kernel would. A path that does not exist stores what exists of it.
func (w *writer) store(rel string, depth int) error {
	_, err := w.resolve(rel, depth, true)
	return err
}

// resolve stores rel's components and returns its real path (no symlink
// in it), or "" when it does not exist or leaves the tree.
func (w *writer) resolve(rel string, depth int, last bool) (string, error) {
	if depth > maxLinks {
		return "", nil
	}
	cur := ""
	parts := strings.Split(rel, "/")
	for i, c := range parts {
		if c == "" || c == "." {
			continue
		}
		next := path.Join(cur, c)
		if strings.HasPrefix(next, "..") {
			return "", nil // left the tree
		}
		full := filepath.Join(w.tree.Root, next)
		fi, err := os.Lstat(full)
		if err != nil {
			return "", nil
		}
		final := i == len(parts)-1
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			target, dest, ok := w.link(next)
			if !ok {
				return "", nil // it leaves the tree: neither stored nor followed
			}
			if err := w.add(&tar.Header{Typeflag: tar.TypeSymlink, Name: next, Linkname: target, Mode: 0o777}, nil); err != nil {
				return "", err
			}
			real, err := w.resolve(dest, depth+1, false)
			if err != nil || real == "" {
				return "", err
			}
			cur = real
			if final && last {
				return cur, w.leaf(cur, depth)
			}
		case fi.IsDir():
			if err := w.add(&tar.Header{Typeflag: tar.TypeDir, Name: next, Mode: 0o755}, nil); err != nil {
				return "", err
			}
			cur = next
			if final && last && w.tree.ListDirs {
				return cur, w.list(cur)
			}
		case fi.Mode().IsRegular() && final:
			cur = next
			if last {
				return cur, w.file(cur)
			}
		default:
			return "", nil // a FIFO, a device, a file in the middle of a path
		}
	}
	return cur, nil
}

// link reads the symlink name (a real path relative to the tree's root:
// no symlink on the way) and returns its target as stored, relative, and
// where it leads (relative to the root). ok is false for a link that
// leaves the tree, which is neither stored nor followed: a relative
// target with more ".." than name is deep, an absolute one in a Beneath
// tree, or one that climbs back with ".." after a name (through a symlink,
// the kernel's ".." is not the lexical one). An absolute target of another
// tree (/lib -> /usr/lib on a host root) is within the tree: stored
// relative, so a replay stays in its tree.
func (w *writer) link(name string) (target, dest string, ok bool) {
	target, err := os.Readlink(filepath.Join(w.tree.Root, name))
	if err != nil || climbsBack(target) {
		return "", "", false
	}
	if filepath.IsAbs(target) {
		if w.tree.Beneath {
			return "", "", false
		}
		if target, err = filepath.Rel("/"+path.Dir(name), target); err != nil {
			return "", "", false
		}
	}
	dest = path.Join(path.Dir(name), target)
	if dest == ".." || strings.HasPrefix(dest, "../") {
		return "", "", false
	}
	return target, dest, true
}

// climbsBack reports whether a symlink's target has a ".." after a name
// ("a/../../x"): resolved through symlinks, it may lead elsewhere than
// its lexical form.
func climbsBack(target string) bool {
	named := false
	for _, c := range strings.Split(target, "/") {
		switch c {
		case "", ".":
		case "..":
			if named {
				return true
			}
		default:
			named = true
		}
	}
	return false
}

// leaf stores what a symlink at the end of a recorded path points to.
func (w *writer) leaf(real string, depth int) error {
	fi, err := os.Lstat(filepath.Join(w.tree.Root, real))
	switch {
	case err != nil:
		return nil
	case fi.IsDir() && w.tree.ListDirs:
		return w.list(real)
	case fi.Mode().IsRegular():
		return w.file(real)
	}
	return nil
}

// list stores a directory's entries as they are: symlinks, directories,
// and regular files empty (only what a reader read has content).
func (w *writer) list(dir string) error {
	entries, err := os.ReadDir(filepath.Join(w.tree.Root, dir))
	if err != nil {
		return nil
	}
	for _, e := range entries {
		name := path.Join(dir, e.Name())
		switch t := e.Type(); {
		case t&fs.ModeSymlink != 0:
			target, _, ok := w.link(name)
			if !ok {
				continue
			}
			if err := w.add(&tar.Header{Typeflag: tar.TypeSymlink, Name: name, Linkname: target, Mode: 0o777}, nil); err != nil {
				return err
			}
		case t.IsDir():
			if err := w.add(&tar.Header{Typeflag: tar.TypeDir, Name: name, Mode: 0o755}, nil); err != nil {
				return err
			}
		case t.IsRegular():
			if err := w.add(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o444}, []byte{}); err != nil {
				return err
			}
		}
	}
	return nil
}

// file stores a regular file's content, read as the readers read it:
// non-blocking, regular files only, bounded.
func (w *writer) file(rel string) error {
	limit := int64(sysfs.MaxAttrSize)
	if !w.tree.ListDirs {
		limit = maxHostFile
	}
	b, err := inputfile.Read(filepath.Join(w.tree.Root, rel), limit)
	if err != nil {
		w.st.Unreadable++
		return nil
	}
	if w.tree.Filter != nil {
		var ok bool
		if b, ok = w.tree.Filter("/"+rel, b); !ok {
			return nil
		}
	}
	return w.add(&tar.Header{Typeflag: tar.TypeReg, Name: rel, Mode: 0o444}, b)
}

// add writes one entry once, but for a file a listing stored empty that a
// reader then read: its content goes in as a second entry of the same
// name, which extraction writes over the first.
func (w *writer) add(h *tar.Header, content []byte) error {
	name := path.Join(w.tree.Dir, h.Name)
	prev, seen := w.done[name]
	if seen && (prev || h.Typeflag != tar.TypeReg || len(content) == 0) {
		return nil
	}
	if w.st.Files+w.st.Dirs+w.st.Symlinks >= w.lim.entries {
		return fmt.Errorf("more than %d entries: %w", w.lim.entries, ErrTooLarge)
	}
	if w.st.Bytes+int64(len(content)) > w.lim.bytes {
		return fmt.Errorf("more than %d bytes: %w", w.lim.bytes, ErrTooLarge)
	}
	h.Name = name
	if h.Typeflag == tar.TypeDir {
		h.Name += "/"
	}
	h.Size = int64(len(content))
	h.ModTime = time.Unix(0, 0)
	h.Format = tar.FormatPAX
	if err := w.tw.WriteHeader(h); err != nil {
		return err
	}
	if len(content) > 0 {
		if _, err := w.tw.Write(content); err != nil {
			return err
		}
	}
	w.done[name] = h.Typeflag == tar.TypeReg && len(content) > 0
	switch h.Typeflag {
	case tar.TypeReg:
		w.st.Files++
		w.st.Bytes += int64(len(content))
	case tar.TypeDir:
		w.st.Dirs++
	case tar.TypeSymlink:
		w.st.Symlinks++
	}
	return nil
}
