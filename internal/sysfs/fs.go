package sysfs

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/railyard-io/railyard/internal/pciaddr"
)

// ErrNotFound is returned (wrapped) when a device or attribute does not exist.
var ErrNotFound = errors.New("not found")

// FS is a sysfs tree rooted at Root ("/sys" on a real node).
type FS struct {
	Root string
	// Recorder, when set, is told every path below the root a reader
	// builds (relative to the root) before it touches it: `railyard topo
	// --capture` stores exactly what discovery and doctor read.
	Recorder Recorder
	// way is how paths are resolved within Root (beneath.go): the zero
	// value is openat2, else os.Root; tests pick one.
	way beneath
	// dir is Root's directory, opened at the first read (New sets it).
	dir *rootDir
}

// Recorder collects the paths readers touch. It must be safe for
// concurrent use (discovery reads in parallel).
type Recorder interface {
	Record(path string)
}

// New returns the sysfs tree at root; "" means "/sys".
func New(root string) FS {
	if root == "" {
		root = "/sys"
	}
	return FS{Root: root, dir: &rootDir{path: root}}
}

// Path joins elements below the root, for a caller that checks a path
// exists. The readers here resolve every path within the root (openAt);
// a path of Path's opened elsewhere is not.
func (f FS) Path(elem ...string) string {
	return filepath.Join(f.Root, f.rel(elem...))
}

// rel joins elements into a path relative to the root and tells the
// Recorder.
func (f FS) rel(elem ...string) string {
	r := filepath.Join(elem...)
	if f.Recorder != nil {
		f.Recorder.Record(r)
	}
	return r
}

// ReadString reads an attribute file (a path below the root) and trims
// surrounding white space.
func (f FS) ReadString(rel string) (string, error) {
	b, err := f.readSmall(f.rel(rel))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("%s: %w", rel, ErrNotFound)
		}
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}

// ReadInt reads a decimal attribute.
func (f FS) ReadInt(rel string) (int, error) {
	s, err := f.ReadString(rel)
	if err != nil {
		return 0, err
	}
	v, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("%s: %s: %w", rel, Quote(s), numError(err))
	}
	return v, nil
}

// ReadHex reads a hexadecimal attribute such as "0x15b3".
func (f FS) ReadHex(rel string) (uint64, error) {
	s, err := f.ReadString(rel)
	if err != nil {
		return 0, err
	}
	v, err := ParseHex(s)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", rel, err)
	}
	return v, nil
}

// LinkBase returns the last element of the symlink at rel ("mlx5_core" for
// a driver link), or ErrNotFound.
func (f FS) LinkBase(rel string) (string, error) {
	target, err := f.readlink(f.rel(rel))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("%s: %w", rel, ErrNotFound)
		}
		return "", err
	}
	return filepath.Base(target), nil
}

// List returns the sorted names in a directory below the root; a missing
// directory is an empty list.
func (f FS) List(rel string) ([]string, error) {
	names, err := f.readDirNames(f.rel(rel))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	sort.Strings(names)
	return names, nil
}

// readDirNames lists a directory with raw getdents64 calls. Like readSmall
// it exists for speed: discovery lists four directories per VF. It reads
// until a call returns nothing: a short batch is never the end. ext4,
// where a captured or test tree may live, returned a PF directory's "net"
// alone, then its 15 other entries; and on every filesystem, sysfs and
// tmpfs included, getdents stops filling the buffer when the thread has a
// signal pending (fs/readdir.c), which Go's preemption (SIGURG) makes
// common on a loaded machine. Stopping at a short batch lost a PF's VFs
// and a VF's counters (TestReadDirNamesIsWholeUnderSignals).
func (f FS) readDirNames(rel string) ([]string, error) {
	return f.readDirNamesBy(rel, syscall.ReadDirent)
}

// direntBufs are readDirNamesBy's getdents buffers.
var direntBufs = sync.Pool{New: func() any { b := make([]byte, 8192); return &b }}

// readDirNamesBy is readDirNames with getdents as the getdents64 call.
func (f FS) readDirNamesBy(rel string, getdents func(fd int, buf []byte) (int, error)) ([]string, error) {
	p := filepath.Join(f.Root, rel)
	fd, err := f.openAt(rel, syscall.O_RDONLY|syscall.O_DIRECTORY)
	if err != nil {
		return nil, err
	}
	defer syscall.Close(fd)
	// Pooled: handed to getdents, a buffer of its own would be a heap
	// allocation per listing (8 KiB for each of ~8,400 listings of a
	// 2,048-VF node: discovery took 1.5x the time).
	bp := direntBufs.Get().(*[]byte)
	defer direntBufs.Put(bp)
	buf := *bp
	var names []string
	for {
		n, err := getdents(fd, buf)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return nil, &fs.PathError{Op: "getdents", Path: p, Err: err}
		}
		if n <= 0 {
			return names, nil
		}
		_, _, names = syscall.ParseDirent(buf[:n], -1, names)
	}
}

// PCIDevices lists the PCI addresses in bus/pci/devices, in address order
// (pciaddr's: numeric, so domain 10000 comes after ffff).
func (f FS) PCIDevices() ([]string, error) {
	names, err := f.List("bus/pci/devices")
	if err != nil {
		return nil, fmt.Errorf("listing PCI devices: %w", err)
	}
	out := names[:0]
	for _, n := range names {
		if pciaddr.IsCanonical(n) {
			out = append(out, n)
		}
	}
	slices.SortFunc(out, pciaddr.CompareStrings)
	return out, nil
}

// PCIDeviceDir resolves bus/pci/devices/<addr> to its real directory, as a
// path relative to the root ("devices/pci0000:15/0000:15:01.0/...").
func (f FS) PCIDeviceDir(addr string) (string, error) {
	if !pciaddr.IsCanonical(addr) {
		return "", fmt.Errorf("%q is not a PCI address (want DDDD:BB:DD.F)", addr)
	}
	rel := f.rel("bus/pci/devices", addr)
	// The kernel first: the link resolves below the root, or no further
	// look (EvalSymlinks would follow it out, and back).
	fd, err := f.openAt(rel, unix.O_PATH|unix.O_DIRECTORY)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("PCI device %s: %w", addr, ErrNotFound)
		}
		return "", fmt.Errorf("PCI device %s: %w", addr, err)
	}
	syscall.Close(fd)
	real, err := filepath.EvalSymlinks(filepath.Join(f.Root, rel))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("PCI device %s: %w", addr, ErrNotFound)
		}
		return "", fmt.Errorf("PCI device %s: %w", addr, err)
	}
	root, err := filepath.EvalSymlinks(f.Root)
	if err != nil {
		return "", err
	}
	dir, err := filepath.Rel(root, real)
	if err != nil || strings.HasPrefix(dir, "..") {
		return "", fmt.Errorf("PCI device %s resolves outside %s: %w", addr, f.Root, ErrOutsideRoot)
	}
	return dir, nil
}

// Netdevs returns the network interfaces of a PCI function (its net/ dir).
func (f FS) Netdevs(addr string) ([]string, error) {
	return f.List(filepath.Join("bus/pci/devices", addr, "net"))
}

// RDMADevices returns the RDMA devices of a PCI function (its infiniband/ dir).
func (f FS) RDMADevices(addr string) ([]string, error) {
	return f.List(filepath.Join("bus/pci/devices", addr, "infiniband"))
}

// UverbsDevices returns the verbs char devices of a PCI function
// ("uverbs0"), from its infiniband_verbs/ dir.
func (f FS) UverbsDevices(addr string) ([]string, error) {
	return f.List(filepath.Join("bus/pci/devices", addr, "infiniband_verbs"))
}

// NetdevPCIAddress returns the PCI address behind a network interface
// (class/net/<name>/device), or ErrNotFound for a virtual interface.
func (f FS) NetdevPCIAddress(name string) (string, error) {
	if name == "" || strings.ContainsAny(name, "/\x00") || name == "." || name == ".." {
		return "", fmt.Errorf("invalid interface name %q", name)
	}
	addr, err := f.LinkBase(filepath.Join("class/net", name, "device"))
	if err != nil {
		return "", fmt.Errorf("interface %s has no PCI device: %w", name, err)
	}
	if !pciaddr.IsCanonical(addr) {
		return "", fmt.Errorf("interface %s: device %q is not PCI: %w", name, addr, ErrNotFound)
	}
	return addr, nil
}
