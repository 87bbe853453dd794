package discovery

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/railyard-io/railyard/internal/fakesysfs"
	"github.com/railyard-io/railyard/internal/machine"
	"github.com/railyard-io/railyard/internal/topology"
)

// smallMachine is one host bridge with a switch holding a GPU and a RoCE
// NIC, and a second socket's host bridge with a GPU and an IB NIC on root
// ports of their own.
const smallMachine = `{"id":"small","tree":[
 {"kind":"root","domain_bus":"pci0000:00","numa":0,"children":[
  {"kind":"root_port","bdf":"0000:00:01.0","children":[
   {"kind":"switch","bdf":"0000:01:00.0","children":[
    {"kind":"switch_port","bdf":"0000:02:00.0","children":[{"kind":"gpu","bdf":"0000:03:00.0","name":"GPU0"}]},
    {"kind":"switch_port","bdf":"0000:02:01.0","children":[{"kind":"nic","bdf":"0000:04:00.0","rdma_dev":"mlx5_0","netdev":"enp4s0f0np0","link_layer":"Ethernet","rate":"100 Gb/sec (4X EDR)"}]}]}]}]},
 {"kind":"root","domain_bus":"pci0000:80","numa":1,"children":[
  {"kind":"root_port","bdf":"0000:80:01.0","children":[{"kind":"gpu","bdf":"0000:81:00.0","name":"GPU1"}]},
  {"kind":"root_port","bdf":"0000:80:02.0","children":[{"kind":"nic","bdf":"0000:82:00.0","rdma_dev":"mlx5_1","netdev":"ibp130s0","class":"0x020700"}]}]}]}`

func generate(t testing.TB, desc string, vfs int) string {
	t.Helper()
	d, err := machine.Parse([]byte(desc))
	if err != nil {
		t.Fatal(err)
	}
	return generateDesc(t, d, vfs)
}

func generateDesc(t testing.TB, d *machine.Description, vfs int) string {
	t.Helper()
	dir, err := fakesysfs.MkdirTemp()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fakesysfs.Cleanup(dir) })
	if err := fakesysfs.Generate(dir, d, fakesysfs.Options{VFsPerPF: vfs}); err != nil {
		t.Fatal(err)
	}
	return dir
}

func mustDiscover(t *testing.T, root string) *topology.Topology {
	t.Helper()
	topo, err := Discover(context.Background(), root)
	if err != nil {
		t.Fatal(err)
	}
	return topo
}

func hasWarning(topo *topology.Topology, substr string) bool {
	for _, w := range topo.Warnings {
		if strings.Contains(w.String(), substr) {
			return true
		}
	}
	return false
}

func TestDiscoverSmallMachine(t *testing.T) {
	topo := mustDiscover(t, generate(t, smallMachine, 0))
	if len(topo.GPUs) != 2 || len(topo.NICs) != 2 {
		t.Fatalf("got %d GPUs, %d NICs", len(topo.GPUs), len(topo.NICs))
	}
	want := map[[2]string]topology.Class{
		{"0000:03:00.0", "0000:04:00.0"}: topology.PIX,
		{"0000:03:00.0", "0000:82:00.0"}: topology.SYS,
		{"0000:81:00.0", "0000:04:00.0"}: topology.SYS,
		{"0000:81:00.0", "0000:82:00.0"}: topology.PHB,
	}
	for pair, c := range want {
		if got := topo.Class(pair[0], pair[1]); got != c {
			t.Errorf("class %v = %s, want %s", pair, got, c)
		}
	}
	roce := topo.NICs[0]
	if roce.LinkLayer != "Ethernet" || roce.Netdev != "enp4s0f0np0" || roce.RDMA != "mlx5_0" || roce.Uverbs != "uverbs0" {
		t.Errorf("RoCE NIC: %+v", roce)
	}
	if got := roce.Ports[0].RoCEv2GIDs; len(got) != 2 || got[0] != 1 || got[1] != 3 {
		t.Errorf("RoCE v2 GID indexes = %v, want [1 3]", got)
	}
	if got := roce.Ports[0].RoutableRoCEv2GIDs; len(got) != 1 || got[0] != 3 {
		t.Errorf("routable RoCE v2 GID indexes = %v, want [3] (1 is link-local)", got)
	}
	if roce.Ports[0].RateGbps != 100 || !roce.Ports[0].Active() {
		t.Errorf("port: %+v", roce.Ports[0])
	}
	ib := topo.NICs[1]
	if ib.LinkLayer != "InfiniBand" || len(ib.Ports[0].RoCEv2GIDs) != 0 {
		t.Errorf("IB NIC: %+v", ib)
	}
	if topo.HostBridges[1].NUMA != 1 {
		t.Errorf("host bridges: %+v", topo.HostBridges)
	}
}

func TestPortDownIsWarnedAndInactive(t *testing.T) {
	root := generate(t, smallMachine, 0)
	if err := fakesysfs.SetPortState(root, "mlx5_1", 1, fakesysfs.PortDown); err != nil {
		t.Fatal(err)
	}
	topo := mustDiscover(t, root)
	nic, _ := topo.NIC("0000:82:00.0")
	if nic.Ports[0].Active() || nic.Ports[0].State != "DOWN" || nic.Ports[0].PhysState != "Disabled" {
		t.Errorf("port after DOWN: %+v", nic.Ports[0])
	}
	if !hasWarning(topo, "mlx5_1 port 1 is DOWN") {
		t.Errorf("no DOWN warning in %v", topo.Warnings)
	}
}

func TestNUMAUnknown(t *testing.T) {
	root := generate(t, smallMachine, 0)
	// A BIOS that does not report NUMA: every numa_node is -1.
	matches, _ := filepath.Glob(filepath.Join(root, "bus/pci/devices/*/numa_node"))
	for _, m := range matches {
		if err := os.WriteFile(m, []byte("-1\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	topo := mustDiscover(t, root)
	for _, g := range topo.GPUs {
		if g.NUMA != -1 {
			t.Errorf("GPU %s NUMA %d, want -1", g.PCI, g.NUMA)
		}
	}
	// Without NUMA information two host bridges count as one NUMA node.
	if c := topo.Class("0000:03:00.0", "0000:82:00.0"); c != topology.NODE {
		t.Errorf("class across host bridges with unknown NUMA = %s, want NODE", c)
	}
}

func TestVFsBoundToVFIOHaveNoNetdev(t *testing.T) {
	root := generate(t, smallMachine, 4)
	topo := mustDiscover(t, root)
	nic, _ := topo.NIC("0000:04:00.0")
	if len(nic.VFs) != 4 {
		t.Fatalf("%d VFs, want 4", len(nic.VFs))
	}
	vf := nic.VFs[2].PCI
	if err := fakesysfs.BindDriver(root, vf, "vfio-pci"); err != nil {
		t.Fatal(err)
	}
	topo = mustDiscover(t, root)
	got, pf, ok := topo.VF(vf)
	if !ok || pf.PCI != "0000:04:00.0" {
		t.Fatalf("VF %s not found under its PF", vf)
	}
	if got.Driver != "vfio-pci" || got.Netdev != "" || got.RDMA != "" || got.Uverbs != "" {
		t.Errorf("vfio VF: %+v", got)
	}
	if hasWarning(topo, "has no netdev") {
		t.Errorf("a vfio VF without netdev is expected, not a warning: %v", topo.Warnings)
	}
}

func TestMissingAndBrokenFiles(t *testing.T) {
	root := generate(t, smallMachine, 0)
	dev := filepath.Join(root, "bus/pci/devices")
	// The GPU lost its class file; the IB port's rate is garbage; the
	// RoCE NIC's numa_node is not a number.
	if err := os.Remove(filepath.Join(dev, "0000:81:00.0", "class")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "class/infiniband/mlx5_1/ports/1/rate"), []byte("fast\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dev, "0000:04:00.0", "numa_node"), []byte("zero\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	topo := mustDiscover(t, root)
	if len(topo.GPUs) != 1 {
		t.Errorf("GPUs = %v, want only the one with a class", topo.GPUs)
	}
	for _, w := range []string{"0000:81:00.0: skipped: class", `rate "fast"`, `numa_node "zero"`} {
		if !hasWarning(topo, w) {
			t.Errorf("no warning containing %q in %v", w, topo.Warnings)
		}
	}
}

// A tree whose functions are all listed but none readable (the tree being
// deleted under the reader: its bus links dangle) is an error, not a node
// without devices: an agent would otherwise mark every device unhealthy
// and kubelet refuse every pod (seen in a proof run of the late-binding
// e2e, where discovery found 0 NICs and 0 GPUs for one resync).
func TestNoReadableFunctionIsAnError(t *testing.T) {
	root := generate(t, smallMachine, 2)
	if err := os.RemoveAll(filepath.Join(root, "devices")); err != nil {
		t.Fatal(err)
	}
	if _, err := Discover(context.Background(), root); err == nil || !strings.Contains(err.Error(), "PCI functions") {
		t.Fatalf("every function unreadable: %v, want an error naming the PCI functions", err)
	}
}

func TestVanishedDevice(t *testing.T) {
	root := generate(t, smallMachine, 2)
	// A VF disappears between listing and reading: its bus link dangles.
	topo := mustDiscover(t, root)
	vf := topo.NICs[0].VFs[1].PCI
	dir, err := filepath.EvalSymlinks(filepath.Join(root, "bus/pci/devices", vf))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	topo = mustDiscover(t, root)
	if n := topo.NICs[0]; len(n.VFs) != 1 {
		t.Errorf("VFs after one vanished: %+v", n.VFs)
	}
	if !hasWarning(topo, vf) {
		t.Errorf("no warning about %s in %v", vf, topo.Warnings)
	}
}

func TestEveryDeviceOnItsOwnDomain(t *testing.T) {
	// Hyper-V style: each device on its own PCI domain, host bridge below
	// platform devices (/sys/devices/LNXSYSTM:00/.../pci0001:00/...).
	root := t.TempDir()
	mk := func(addr, hb string, vendor, class string, numa int) string {
		dir := filepath.Join("devices/LNXSYSTM:00/VMBUS:01", hb, addr)
		for f, v := range map[string]string{"vendor": vendor, "device": "0x1234", "class": class, "numa_node": fmt.Sprint(numa)} {
			p := filepath.Join(root, dir, f)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(v+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		link := filepath.Join(root, "bus/pci/devices", addr)
		if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(filepath.Join("../../..", dir), link); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	mk("0001:00:00.0", "pci0001:00", "0x10de", "0x030200", 0)
	nic := mk("0101:00:00.0", "pci0101:00", "0x15b3", "0x020700", 0)
	mk("0102:00:00.0", "pci0102:00", "0x15b3", "0x020700", 1)
	_ = os.MkdirAll(filepath.Join(root, nic, "infiniband/mlx5_0/ports/1"), 0o755)
	_ = os.WriteFile(filepath.Join(root, nic, "infiniband/mlx5_0/ports/1/state"), []byte("4: ACTIVE\n"), 0o644)
	topo := mustDiscover(t, root)
	if len(topo.GPUs) != 1 || len(topo.NICs) != 1 || len(topo.HostBridges) != 3 {
		t.Fatalf("gpus %v nics %v host bridges %v", topo.GPUs, topo.NICs, topo.HostBridges)
	}
	if c := topo.Class("0001:00:00.0", "0101:00:00.0"); c != topology.NODE {
		t.Errorf("class = %s, want NODE", c)
	}
	if !hasWarning(topo, "no verbs device") {
		t.Errorf("missing uverbs not warned: %v", topo.Warnings)
	}
}

func TestNoPCIBus(t *testing.T) {
	if _, err := Discover(context.Background(), t.TempDir()); err == nil || !strings.Contains(err.Error(), "no PCI bus") {
		t.Fatalf("got %v, want a no PCI bus error", err)
	}
}

func TestContextCancelled(t *testing.T) {
	root := generate(t, smallMachine, 0)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Discover(ctx, root); err == nil {
		t.Fatal("discovery with a cancelled context succeeded")
	}
}
