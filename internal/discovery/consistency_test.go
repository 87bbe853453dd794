package discovery

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/railyard-io/railyard/internal/topology"
)

// A switch port whose bus/pci/devices entry is missing used to end its
// GPU's chain of bridges, and GPU0 x mlx5_0 (one switch: PIX) came out
// PHB without a word. The sysfs path still says where the bridge sits.
func TestMissingBridgeKeepsClassesAndWarns(t *testing.T) {
	root := generate(t, smallMachine, 0)
	if got := mustDiscover(t, root).Class("0000:03:00.0", "0000:04:00.0"); got != topology.PIX {
		t.Fatalf("complete tree: class %s, want PIX", got)
	}
	if err := os.Remove(filepath.Join(root, "bus/pci/devices/0000:02:00.0")); err != nil {
		t.Fatal(err)
	}
	topo := mustDiscover(t, root)
	if got := topo.Class("0000:03:00.0", "0000:04:00.0"); got != topology.PIX {
		t.Errorf("without the switch port's entry: class %s, want PIX", got)
	}
	if !hasWarning(topo, "0000:02:00.0: PCI bridge above 0000:03:00.0 is missing from bus/pci/devices") {
		t.Errorf("no warning about the missing bridge: %v", topo.Warnings)
	}
}

// A whole missing chain (root port and switch) is rebuilt from the path.
func TestMissingBridgeChain(t *testing.T) {
	root := generate(t, smallMachine, 0)
	for _, b := range []string{"0000:00:01.0", "0000:01:00.0", "0000:02:00.0", "0000:02:01.0"} {
		if err := os.Remove(filepath.Join(root, "bus/pci/devices", b)); err != nil {
			t.Fatal(err)
		}
	}
	topo := mustDiscover(t, root)
	if got := topo.Class("0000:03:00.0", "0000:04:00.0"); got != topology.PIX {
		t.Errorf("class %s, want PIX", got)
	}
	n := 0
	for _, w := range topo.Warnings {
		if strings.Contains(w.Message, "PCI bridge above") {
			n++
		}
	}
	if n != 4 {
		t.Errorf("%d missing-bridge warnings, want one per bridge (4): %v", n, topo.Warnings)
	}
}

// A VF whose PF does not list it (no virtfnN link) is not offered, and
// says so.
func TestUnlistedVFIsWarned(t *testing.T) {
	root := generate(t, smallMachine, 2)
	topo := mustDiscover(t, root)
	vf := topo.NICs[0].VFs[1]
	if err := os.Remove(filepath.Join(root, "bus/pci/devices", topo.NICs[0].PCI, "virtfn1")); err != nil {
		t.Fatal(err)
	}
	topo = mustDiscover(t, root)
	if len(topo.NICs[0].VFs) != 1 {
		t.Fatalf("VFs = %+v, want one", topo.NICs[0].VFs)
	}
	if !hasWarning(topo, vf.PCI+": VF with RDMA device "+vf.RDMA+" is not among its PF "+topo.NICs[0].PCI+"'s virtfnN links: not offered") {
		t.Errorf("no warning about the unlisted VF: %v", topo.Warnings)
	}
}

// A FIFO in place of an attribute used to block discovery forever; a huge
// numa_node was read whole and quoted in a warning. Now each is a short
// warning and discovery finishes.
func TestHostileAttributesAreWarnedNotHung(t *testing.T) {
	root := generate(t, smallMachine, 0)
	dev := filepath.Join(root, "bus/pci/devices")
	fifo := func(p string) {
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
		if err := syscall.Mkfifo(p, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	fifo(filepath.Join(dev, "0000:81:00.0", "vendor"))
	fifo(filepath.Join(root, "class/infiniband/mlx5_1/ports/1/state"))
	fifo(filepath.Join(dev, "0000:03:00.0", "numa_node"))
	big, err := os.OpenFile(filepath.Join(dev, "0000:04:00.0", "numa_node"), os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := big.Truncate(64 << 20); err != nil {
		t.Fatal(err)
	}
	big.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	topo, err := Discover(ctx, root)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{
		"0000:81:00.0: skipped: vendor: read ",
		"not a regular file (a FIFO)",
		"0000:82:00.0: port 1: read ",
		"0000:04:00.0: numa_node: read ",
		"larger than 4096 bytes",
		"0000:03:00.0: numa_node: read ",
	} {
		if !hasWarning(topo, w) {
			t.Errorf("no warning containing %q", w)
		}
	}
	for _, w := range topo.Warnings {
		if len(w.String()) > 2*maxWarning+50 {
			t.Errorf("warning of %d bytes", len(w.String()))
		}
	}
	if len(topo.GPUs) != 1 || len(topo.NICs) != 2 {
		t.Errorf("%d GPUs, %d NICs; want the GPU without a vendor skipped and both NICs", len(topo.GPUs), len(topo.NICs))
	}
}

// Names with control characters or bytes that are not UTF-8 are kept as
// they are in the model (they are the kernel's names) and warned about,
// escaped and bounded.
func TestStrangeNamesAreWarnedEscaped(t *testing.T) {
	root := generate(t, smallMachine, 0)
	dir := filepath.Join(root, "bus/pci/devices/0000:04:00.0/net")
	odd := "en\x1b[31mp\xff"
	if err := os.Rename(filepath.Join(dir, "enp4s0f0np0"), filepath.Join(dir, odd)); err != nil {
		t.Fatal(err)
	}
	topo := mustDiscover(t, root)
	n, ok := topo.NIC("0000:04:00.0")
	if !ok || n.Netdev != odd {
		t.Fatalf("netdev = %q, want the name unchanged", n.Netdev)
	}
	if !hasWarning(topo, `netdev name "en\x1b[31mp\xff" has control characters`) {
		t.Errorf("no escaped warning: %q", topo.Warnings)
	}
	for _, w := range topo.Warnings {
		if strings.Contains(w.String(), "\x1b") || strings.Contains(w.String(), "\xff") {
			t.Errorf("raw control byte in warning %q", w)
		}
	}
}
