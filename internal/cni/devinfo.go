package cni

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/railyard-io/railyard/internal/cni/state"
	"github.com/railyard-io/railyard/internal/containerdev"
)

// DefaultDeviceInfoDir is the directory Multus keeps device-info files in
// (network-attachment-definition-client's baseDevInfoPath). railyard-cni
// writes and removes files only in its "cni" subdirectory, and only under
// a name Multus can give the attachment at hand.
const DefaultDeviceInfoDir = "/var/run/k8s.cni.cncf.io/devinfo"

// deviceInfoSubdir is the subdirectory Multus names the files of CNI
// delegates in (cniDevInfoSubDir); "dp" is the device plugins'.
const deviceInfoSubdir = "cni"

// errDeviceInfoPath is returned (wrapped) for a CNIDeviceInfoFile that is not
// the file Multus names for the attachment.
var errDeviceInfoPath = errors.New("not the device-info file Multus names for this attachment")

// attachment names one (container, interface) a device-info file belongs
// to. The network's name is not part of it: Multus names a delegate from a
// NetworkAttachmentDefinition "<NAD namespace>/<NAD name>", which the
// plugin is never told (the config's "name" need not match either).
type attachment struct {
	ContainerID, IfName string
}

// deviceInfoSuffix is how every name Multus can give at's device-info file
// ends: "<delegate name>-<containerID>_<ifname>" with every "/" replaced by
// "-" (multus-cni's delegateRuntimeConfig and
// network-attachment-definition-client's GetCNIDeviceInfoPath), where the
// delegate name is "<namespace>/<name>" for a network from a
// NetworkAttachmentDefinition (LoadDelegateNetConf overwrites the config's
// name) and the config's own name otherwise (a cluster network given as a
// file).
func deviceInfoSuffix(at attachment) string {
	return strings.ReplaceAll("-"+at.ContainerID+"_"+at.IfName, "/", "-")
}

// recAttachment is the attachment rec records.
func recAttachment(rec *state.Record) attachment {
	return attachment{ContainerID: rec.ContainerID, IfName: rec.IfName}
}

func (p *Plugin) deviceInfoDir() string {
	if p.DeviceInfoDir != "" {
		return p.DeviceInfoDir
	}
	return DefaultDeviceInfoDir
}

// checkDeviceInfoPath returns the file name in the device-info directory's
// "cni" subdirectory that path names, when path is a name Multus can give
// at's device-info file: <dir>/cni/<delegate>-<containerID>_<ifname>, as
// given (no "..", no other spelling), with a non-empty delegate part that
// holds no NUL and does not start with "." (the plugin's own temporary
// files do). Anything else fails with errDeviceInfoPath.
func (p *Plugin) checkDeviceInfoPath(path string, at attachment) (string, error) {
	dir := filepath.Join(p.deviceInfoDir(), deviceInfoSubdir)
	suffix := deviceInfoSuffix(at)
	name := strings.TrimPrefix(path, dir+"/")
	prefix, ok := strings.CutSuffix(name, suffix)
	if at.ContainerID == "" || at.IfName == "" || !ok || name == path ||
		prefix == "" || strings.HasPrefix(prefix, ".") || strings.ContainsAny(name, "/\x00") ||
		filepath.Join(dir, name) != path {
		return "", fmt.Errorf("%q: %w (%s)", path, errDeviceInfoPath, filepath.Join(dir, "<network>"+suffix))
	}
	return name, nil
}

// openDeviceInfoDir opens the device-info directory's "cni" subdirectory.
// The configured directory itself is resolved (on most nodes /var/run is a
// symlink to /run); below it nothing may be a symlink. create makes both
// directories when missing; without it a missing one returns nil, nil.
func (p *Plugin) openDeviceInfoDir(create bool) (*os.File, error) {
	root := p.deviceInfoDir()
	if create {
		if err := os.MkdirAll(root, 0o755); err != nil {
			return nil, err
		}
	}
	real, err := filepath.EvalSymlinks(root)
	if errors.Is(err, os.ErrNotExist) && !create {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	rootFD, err := unix.Open(real, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: real, Err: err}
	}
	defer unix.Close(rootFD)
	if create {
		if err := unix.Mkdirat(rootFD, deviceInfoSubdir, 0o755); err != nil && !errors.Is(err, unix.EEXIST) {
			return nil, &os.PathError{Op: "mkdir", Path: filepath.Join(real, deviceInfoSubdir), Err: err}
		}
	}
	fd, err := unix.Openat(rootFD, deviceInfoSubdir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) && !create {
		return nil, nil
	}
	if err != nil {
		// ELOOP or ENOTDIR: a symlink or a file in the directory's place.
		return nil, &os.PathError{Op: "open", Path: filepath.Join(real, deviceInfoSubdir), Err: err}
	}
	return os.NewFile(uintptr(fd), filepath.Join(real, deviceInfoSubdir)), nil
}

// writeDeviceInfo writes rec's device-info file for at, durably: a new
// file created in the directory (O_EXCL, O_NOFOLLOW), fsynced, renamed
// over the name (which replaces a symlink there, never its target), then
// the directory fsynced. The document is containerdev's device-info-spec
// 1.1 document; a device without a PCI address (a netdev named by
// "device" that sysfs shows on no PCI function) gets none, since a "pci"
// document must name its pci-address. "" writes nothing; any other path
// must pass checkDeviceInfoPath.
func (p *Plugin) writeDeviceInfo(path string, at attachment, rec *state.Record) error {
	if path == "" {
		return nil
	}
	name, err := p.checkDeviceInfoPath(path, at)
	if err != nil {
		return invalidf("CNIDeviceInfoFile: %w", err)
	}
	pf := ""
	if rec.PF != nil {
		pf = rec.PF.PCI
	}
	info, err := containerdev.NewDevInfo(rec.PCI, pf, rec.RDMA)
	if errors.Is(err, containerdev.ErrNoPCIAddress) {
		return nil // a netdev without one: a "pci" document must name it
	}
	if err != nil {
		return err
	}
	b, err := json.Marshal(info)
	if err != nil {
		return fmt.Errorf("encoding device info: %w", err)
	}
	dir, err := p.openDeviceInfoDir(true)
	if err != nil {
		return fmt.Errorf("writing device info %s: %w", path, err)
	}
	defer dir.Close()
	if err := writeAt(dir, name, b); err != nil {
		return fmt.Errorf("writing device info %s: %w", path, err)
	}
	return nil
}

// writeAt replaces name in dir with b through a temporary file in dir.
func writeAt(dir *os.File, name string, b []byte) error {
	var r [6]byte
	if _, err := rand.Read(r[:]); err != nil {
		return err
	}
	tmp := "." + name + ".tmp-" + hex.EncodeToString(r[:])
	if len(tmp) > 255 {
		tmp = ".devinfo.tmp-" + hex.EncodeToString(r[:])
	}
	dfd := int(dir.Fd())
	fd, err := unix.Openat(dfd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644)
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(fd), tmp)
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = unix.Renameat(dfd, tmp, dfd, name)
	}
	if err != nil {
		_ = unix.Unlinkat(dfd, tmp, 0)
		return err
	}
	return dir.Sync()
}

// removeDeviceInfo removes the device-info file path of at. A path that is
// not the file Multus names for at is left alone with a warning in the
// plugin's log: DEL and GC never fail on it and never touch anything else.
func (p *Plugin) removeDeviceInfo(path string, at attachment) error {
	if path == "" {
		return nil
	}
	name, err := p.checkDeviceInfoPath(path, at)
	if err != nil {
		p.warn("device-info file left alone", "error", err)
		return nil
	}
	dir, err := p.openDeviceInfoDir(false)
	if errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ELOOP) {
		// A symlink or a file in the directory's place: nothing of ours
		// can be behind it.
		p.warn("device-info file left alone", "error", err)
		return nil
	}
	if err != nil {
		return fmt.Errorf("removing device info %s: %w", path, err)
	}
	if dir == nil {
		return nil
	}
	defer dir.Close()
	// unlinkat removes a symlink itself, never what it points to.
	if err := unix.Unlinkat(int(dir.Fd()), name, 0); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil
		}
		return fmt.Errorf("removing device info %s: %w", path, err)
	}
	if err := dir.Sync(); err != nil {
		return fmt.Errorf("removing device info %s: %w", path, err)
	}
	return nil
}
