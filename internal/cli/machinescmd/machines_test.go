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
