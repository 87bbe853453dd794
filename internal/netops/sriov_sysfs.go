package netops

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/railyard-io/railyard/internal/pciaddr"
)

// SRIOVSysfs changes SR-IOV state the way an administrator does, by
// writing sysfs below Root ("/sys"): sriov_numvfs creates and removes VFs,
// driver_override + unbind + drivers_probe move a function to another
// driver. Like the VF settings, this needs SR-IOV hardware; tests use
// fakesysfs.Kernel, which follows the kernel's rules on a fake tree.
type SRIOVSysfs struct {
	Root string
}

func (s SRIOVSysfs) root() string {
	if s.Root == "" {
		return "/sys"
	}
	return s.Root
}

// validPCI: addr names a function in bus/pci/devices, so it must be the
// kernel's form of an address (which also keeps it one path element).
func validPCI(addr string) error {
	if !pciaddr.IsCanonical(addr) {
		return fmt.Errorf("invalid PCI address %q: want DDDD:BB:DD.F as sysfs names it: %w", addr, pciaddr.ErrInvalid)
	}
	return nil
}

// writeAttr writes one sysfs attribute (rel, below the root) with a single
// write(2), as the kernel expects; the kernel's refusal (EBUSY, ERANGE)
// comes back from it. The path is resolved beneath the root (os.Root:
// openat2 RESOLVE_BENEATH or a walk with O_NOFOLLOW): symlinks that stay
// inside, as sysfs's own do, are followed, and one that leaves the root
// (through "..", an absolute target) fails the write. It opens with
// O_TRUNC (sysfs ignores it; a regular file in a fake tree needs it) and
// never creates a file.
func (s SRIOVSysfs) writeAttr(rel, value string) error {
	r, err := os.OpenRoot(s.root())
	if err != nil {
		return err
	}
	defer r.Close()
	f, err := r.OpenFile(rel, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return fmt.Errorf("%w (writes stay below %s)", err, s.root())
	}
	_, werr := f.WriteString(value)
	cerr := f.Close()
	if werr != nil {
		return werr
	}
	return cerr
}

// SetNumVFs writes n to the PF's sriov_numvfs. The kernel refuses to change
// a non-zero count to another non-zero one (EBUSY); callers go through 0.
func (s SRIOVSysfs) SetNumVFs(ctx context.Context, pf string, n int) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := validPCI(pf); err != nil {
		return err
	}
	if err := s.writeAttr(filepath.Join("bus/pci/devices", pf, "sriov_numvfs"), strconv.Itoa(n)); err != nil {
		return fmt.Errorf("setting %d VFs on %s: %w", n, pf, err)
	}
	return nil
}

// Bind moves a PCI function to driver: driver_override names it, the
// current driver (if any) is unbound and drivers_probe binds the function
// again. Binding to the driver it already has rebinds it, which makes a VF
// pick up a MAC or GUID set through its PF.
func (s SRIOVSysfs) Bind(ctx context.Context, addr, driver string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := validPCI(addr); err != nil {
		return err
	}
	if driver == "" || strings.ContainsAny(driver, "/\x00\n") {
		return fmt.Errorf("invalid driver name %q", driver)
	}
	dev := filepath.Join("bus/pci/devices", addr)
	if err := s.writeAttr(filepath.Join(dev, "driver_override"), driver); err != nil {
		return fmt.Errorf("binding %s to %s: driver_override: %w", addr, driver, err)
	}
	if err := s.writeAttr(filepath.Join(dev, "driver/unbind"), addr); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("binding %s to %s: unbinding: %w", addr, driver, err)
	}
	if err := s.writeAttr("bus/pci/drivers_probe", addr); err != nil {
		return fmt.Errorf("binding %s to %s: drivers_probe: %w", addr, driver, err)
	}
	target, err := readlinkBeneath(s.root(), filepath.Join(dev, "driver"))
	if err != nil || filepath.Base(target) != driver {
		return fmt.Errorf("binding %s to %s: the driver did not take it (is the module loaded? modprobe %s)", addr, driver, driver)
	}
	return nil
}

// readlinkBeneath reads a symlink below root without leaving it.
func readlinkBeneath(root, rel string) (string, error) {
	r, err := os.OpenRoot(root)
	if err != nil {
		return "", err
	}
	defer r.Close()
	return r.Readlink(rel)
}
