package nodesetup

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"testing"

	"github.com/railyard-io/railyard/internal/fakesysfs"
	"github.com/railyard-io/railyard/internal/netops"
	"github.com/railyard-io/railyard/internal/netops/netopstest"
	"github.com/railyard-io/railyard/internal/sysfs"
)

var errInjected = errors.New("injected failure")

// world is a node made of a fake sysfs tree driven by fakesysfs.Kernel
// (sriov_numvfs creates and removes VFs, binding adds and removes their
// devices) and the netops fake (VF addresses set through the PF). It glues
// the two as the kernel does: VFs created or destroyed appear in or vanish
// from the PF's VF list with zero addresses, and a VF bound to its kernel
// driver shows the address set through its PF. Every mutating call is a
// step; failAt injects a failure (without effect) at one of them.
type world struct {
	t      *testing.T
	root   string
	fs     sysfs.FS
	kernel *fakesysfs.Kernel
	ops    *netopstest.Fake
	steps  int
	failAt int
	calls  []string
}

func newWorld(t *testing.T) *world {
	t.Helper()
	d, err := fakesysfs.SmallNode()
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	if err := fakesysfs.Generate(root, d, fakesysfs.Options{TotalVFs: 16}); err != nil {
		t.Fatal(err)
	}
	return &world{t: t, root: root, fs: sysfs.New(root), kernel: fakesysfs.NewKernel(root), ops: netopstest.New()}
}

func (w *world) applier(usage ...UsageSource) *Applier {
	return &Applier{FS: w.fs, SRIOV: w, VF: w, Usage: usage}
}

func (w *world) step(format string, args ...any) error {
	call := fmt.Sprintf(format, args...)
	w.calls = append(w.calls, call)
	w.steps++
	if w.failAt > 0 && w.steps == w.failAt {
		return fmt.Errorf("%s: %w", call, errInjected)
	}
	return nil
}

func (w *world) pfNetdev(pf string) string {
	n, err := w.fs.Netdevs(pf)
	if err != nil || len(n) == 0 {
		w.t.Fatalf("PF %s has no netdev", pf)
	}
	return n[0]
}

// SetNumVFs implements SRIOV.
func (w *world) SetNumVFs(ctx context.Context, pf string, n int) error {
	if err := w.step("SetNumVFs(%s, %d)", pf, n); err != nil {
		return err
	}
	before, _ := w.fs.SRIOV(pf)
	if err := w.kernel.SetNumVFs(ctx, pf, n); err != nil {
		return err
	}
	if before.NumVFs == n {
		return nil
	}
	nd := w.pfNetdev(pf)
	w.ops.RemoveVFs(nd)
	for i := range n {
		w.ops.AddVF(nd, i, netops.VFSettings{})
	}
	return nil
}

// Bind implements SRIOV.
func (w *world) Bind(ctx context.Context, addr, driver string) error {
	if err := w.step("Bind(%s, %s)", addr, driver); err != nil {
		return err
	}
	if err := w.kernel.Bind(ctx, addr, driver); err != nil {
		return err
	}
	if driver == "vfio-pci" {
		return nil
	}
	// The VF's driver reads its address from the device at probe.
	pf, err := w.fs.LinkBase(filepath.Join("bus/pci/devices", addr, "physfn"))
	if err != nil {
		return nil
	}
	st, _ := w.fs.SRIOV(pf)
	for _, v := range st.VFs {
		if v.PCI != addr {
			continue
		}
		a, err := w.ops.VFAddresses(ctx, w.pfNetdev(pf), v.Index)
		if err != nil {
			return err
		}
		if r, _ := w.fs.RDMADevices(addr); len(r) > 0 && !isZero(a.NodeGUID) {
			if err := fakesysfs.SetNodeGUID(w.root, r[0], [8]byte(a.NodeGUID)); err != nil {
				return err
			}
		}
		if n, _ := w.fs.Netdevs(addr); len(n) > 0 && !isZero(a.MAC) {
			if err := fakesysfs.SetNetdevAddress(w.root, n[0], a.MAC.String()); err != nil {
				return err
			}
		}
	}
	return nil
}

func isZero(a net.HardwareAddr) bool {
	for _, b := range a {
		if b != 0 {
			return false
		}
	}
	return true
}

// VFAddresses implements VFOps.
func (w *world) VFAddresses(ctx context.Context, pf string, vf int) (netops.VFAddresses, error) {
	return w.ops.VFAddresses(ctx, pf, vf)
}

// SetVFGUID implements VFOps.
func (w *world) SetVFGUID(ctx context.Context, pf string, vf int, guid net.HardwareAddr) error {
	if err := w.step("SetVFGUID(%s, %d)", pf, vf); err != nil {
		return err
	}
	return w.ops.SetVFGUID(ctx, pf, vf, guid)
}

// SetVFMAC implements VFOps.
func (w *world) SetVFMAC(ctx context.Context, pf string, vf int, mac net.HardwareAddr) error {
	if err := w.step("SetVFMAC(%s, %d)", pf, vf); err != nil {
		return err
	}
	return w.ops.SetVFMAC(ctx, pf, vf, mac)
}
