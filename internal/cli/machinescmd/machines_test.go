package machinescmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/railyard-io/railyard/internal/cli/clitest"
)

func TestListShowsTheVMModels(t *testing.T) {
	out, _, err := clitest.Run(t, NewCommand, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"azure-ndv5", "classes from Azure's NCCL topology file", "vsphere-pvrdma", "PVRDMA (vmw_pvrdma, RoCE)"} {
		if !strings.Contains(out, want) {
			t.Errorf("list lacks %q:\n%s", want, out)
		}
	}
}

// The PVRDMA VM's tree has the PVRDMA function without a netdev of its own
// and its GIDs tied to the paired vmxnet3 netdev.
func TestWriteSysfsPVRDMA(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "sys")
	if _, _, err := clitest.Run(t, NewCommand, "", "vsphere-pvrdma", "--write-sysfs", dir); err != nil {
		t.Fatal(err)
	}
	fn := filepath.Join(dir, "bus/pci/devices/0000:13:00.1")
	if _, err := os.Stat(filepath.Join(fn, "net")); !os.IsNotExist(err) {
		t.Errorf("the PVRDMA function has a net/ directory: %v", err)
	}
	ndev, err := os.ReadFile(filepath.Join(fn, "infiniband/vmw_pvrdma0/ports/1/gid_attrs/ndevs/1"))
	if err != nil || strings.TrimSpace(string(ndev)) != "ens224" {
		t.Errorf("GID 1's netdev = %q, %v; want ens224", ndev, err)
	}
	if drv, err := os.Readlink(filepath.Join(fn, "driver")); err != nil || filepath.Base(drv) != "vmw_pvrdma" {
		t.Errorf("driver = %q, %v", drv, err)
	}
}

// --vfs out of range is refused before anything is written (100000 used
// to write a 1 GB partial tree; -1 was accepted).
func TestVFsBounds(t *testing.T) {
	for _, v := range []string{"100000", "-1", "257"} {
		dir := filepath.Join(t.TempDir(), "sys")
		_, _, err := clitest.Run(t, NewCommand, "", "dgx-h100", "--write-sysfs", dir, "--vfs", v)
		if err == nil || !strings.Contains(err.Error(), "--vfs "+v+": want 0 to 256 VFs per PF") {
			t.Errorf("--vfs %s: err = %v", v, err)
		}
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("--vfs %s: %s was created", v, dir)
		}
	}
	dir := filepath.Join(t.TempDir(), "sys")
	// The bound itself is accepted (a model without SR-IOV NICs keeps it quick).
	if _, _, err := clitest.Run(t, NewCommand, "", "vsphere-pvrdma", "--write-sysfs", dir, "--vfs", "256"); err != nil {
		t.Errorf("--vfs 256: %v", err)
	}
}
