package fakesysfs

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// Kernel plays the kernel's part in SR-IOV control on a fake tree: writing
// sriov_numvfs creates or removes VF entries, and binding a VF to a driver
// adds or removes its netdev, RDMA and verbs devices. Writing a regular
// file in a fake tree creates nothing, so code that changes VFs goes
// through an interface that the real sysfs writer and Kernel both
// implement. Kernel follows the kernel's rules:
//
//   - sriov_numvfs above sriov_totalvfs fails with ERANGE;
//   - changing a non-zero count to another non-zero count fails with
//     EBUSY: the count must go to 0 first (sriov_numvfs_store);
//   - writing the current count does nothing;
//   - new VFs are bound to the PF's driver (sriov_drivers_autoprobe=1).
//
// Errors are *fs.PathError around a syscall.Errno, as a failed write(2)
// of the sysfs file returns.
type Kernel struct {
	Root string

	mu sync.Mutex
}

// NewKernel returns a Kernel over the tree at root.
func NewKernel(root string) *Kernel { return &Kernel{Root: root} }

func (k *Kernel) pathErr(rel string, errno syscall.Errno) error {
	return &fs.PathError{Op: "write", Path: filepath.Join(k.Root, rel), Err: errno}
}

// SetNumVFs writes n to the PF's sriov_numvfs.
func (k *Kernel) SetNumVFs(ctx context.Context, pf string, n int) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	rel := filepath.Join("bus/pci/devices", pf, "sriov_numvfs")
	dir, err := resolve(k.Root, pf)
	if err != nil {
		return k.pathErr(rel, syscall.ENOENT)
	}
	abs := filepath.Join(k.Root, dir)
	total, err := strconv.Atoi(readTrim(filepath.Join(abs, "sriov_totalvfs")))
	if err != nil {
		return k.pathErr(rel, syscall.ENOENT)
	}
	cur, _ := strconv.Atoi(readTrim(filepath.Join(abs, "sriov_numvfs")))
	switch {
	case n < 0:
		return k.pathErr(rel, syscall.EINVAL)
	case n > total:
		return k.pathErr(rel, syscall.ERANGE)
	case n == cur:
		return nil
	case n == 0:
		return RemoveVFs(k.Root, pf)
	case cur != 0:
		return k.pathErr(rel, syscall.EBUSY)
	}
	return AddVFs(k.Root, pf, n)
}

// Bind binds a PCI function to driver, as writing driver_override, the
// current driver's unbind and drivers_probe does: binding to vfio-pci
// removes the function's netdev, RDMA and verbs devices; binding a VF back
// to its PF's driver creates them again. Binding to the driver it has
// rebinds it (the devices are recreated).
func (k *Kernel) Bind(ctx context.Context, addr, driver string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if driver == "" || strings.ContainsAny(driver, "/\x00") {
		return k.pathErr(filepath.Join("bus/pci/devices", addr, "driver_override"), syscall.EINVAL)
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	dir, err := resolve(k.Root, addr)
	if err != nil {
		return k.pathErr(filepath.Join("bus/pci/devices", addr, "driver_override"), syscall.ENOENT)
	}
	if driver == "vfio-pci" {
		return BindDriver(k.Root, addr, driver)
	}
	// Back to a kernel network driver: drop what the function has, then
	// recreate its devices as the driver's probe does.
	if err := BindDriver(k.Root, addr, "vfio-pci"); err != nil {
		return err
	}
	if err := BindDriver(k.Root, addr, driver); err != nil {
		return err
	}
	return k.probeVF(dir)
}

// probeVF recreates a VF's netdev, RDMA and verbs devices.
func (k *Kernel) probeVF(vfDir string) error {
	abs := filepath.Join(k.Root, vfDir)
	pfAddr := filepath.Base(mustReadlink(filepath.Join(abs, "physfn")))
	if pfAddr == "." {
		return nil // a PF: nothing modelled
	}
	pfDir, err := resolve(k.Root, pfAddr)
	if err != nil {
		return err
	}
	index := -1
	links, _ := filepath.Glob(filepath.Join(k.Root, pfDir, "virtfn*"))
	for _, l := range links {
		if filepath.Base(mustReadlink(l)) == filepath.Base(vfDir) {
			index, _ = strconv.Atoi(strings.TrimPrefix(filepath.Base(l), "virtfn"))
		}
	}
	if index < 0 {
		return fmt.Errorf("fakesysfs: %s is not a VF of %s", vfDir, pfAddr)
	}
	pfAbs := filepath.Join(k.Root, pfDir)
	v := vfEndpoints{pfAddr: pfAddr, vfDir: vfDir, index: index,
		pfNet: firstEntry(filepath.Join(pfAbs, "net")), pfRDMA: firstEntry(filepath.Join(pfAbs, "infiniband"))}
	v.st = portState{state: "4: ACTIVE", phys: "5: LinkUp", rate: "100 Gb/sec (4X EDR)", linkLayer: "Ethernet"}
	if v.pfRDMA != "" {
		pd := filepath.Join(pfAbs, "infiniband", v.pfRDMA, "ports/1")
		v.st.rate, v.st.linkLayer = readTrim(filepath.Join(pd, "rate")), readTrim(filepath.Join(pd, "link_layer"))
	}
	nextRDMA := nextIndex(filepath.Join(k.Root, "class/infiniband"), "mlx5_")
	nextUverbs := nextIndex(filepath.Join(k.Root, "class/infiniband_verbs"), "uverbs")
	return v.write(k.Root, &nextRDMA, &nextUverbs)
}

// MoveNetdevOut removes a netdev from the tree's class/net, as moving it
// into a pod's network namespace does (the VF keeps its driver).
func MoveNetdevOut(root, netdev string) error {
	l := filepath.Join(root, "class/net", netdev)
	t, err := os.Readlink(l)
	if err != nil {
		return fmt.Errorf("fakesysfs: netdev %s: %w", netdev, err)
	}
	if err := os.RemoveAll(filepath.Clean(filepath.Join(filepath.Dir(l), t))); err != nil {
		return err
	}
	return os.Remove(l)
}
