package discovery

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/railyard-io/railyard/internal/fakesysfs"
	"github.com/railyard-io/railyard/internal/nccltopo"
	"github.com/railyard-io/railyard/internal/topology"
)

// Topologies real machines produce (issue 14): each test generates the
// sysfs tree of such a machine with fakesysfs.

func nicAddrs(topo *topology.Topology) []string {
	var out []string
	for _, n := range topo.NICs {
		out = append(out, n.PCI)
	}
	return out
}

func gpuAddrs(topo *topology.Topology) []string {
	var out []string
	for _, g := range topo.GPUs {
		out = append(out, g.PCI)
	}
	return out
}

// InfiniBand HCAs whose PCI class is 0x0c06 (InfiniBand controller, a
// serial-bus class): a ConnectX-2 (mlx4) and a QLogic TrueScale (qib). They
// have infiniband/<dev> children, so they are RDMA NICs.
func TestInfiniBandControllerClassIsANIC(t *testing.T) {
	root := generate(t, `{"id":"ib-0c06","tree":[
 {"kind":"root","domain_bus":"pci0000:00","numa":0,"children":[
  {"kind":"root_port","bdf":"0000:00:02.0","children":[
   {"kind":"switch","bdf":"0000:01:00.0","children":[
    {"kind":"switch_port","bdf":"0000:02:00.0","children":[{"kind":"gpu","bdf":"0000:03:00.0","class":"0x030200"}]},
    {"kind":"switch_port","bdf":"0000:02:01.0","children":[{"kind":"nic","bdf":"0000:04:00.0","vendor":"0x15b3","device":"0x673c","class":"0x0c0600","rdma_dev":"mlx4_0","netdev":"ib0","rate":"40 Gb/sec (4X QDR)"}]}]}]},
  {"kind":"root_port","bdf":"0000:00:03.0","children":[
   {"kind":"nic","bdf":"0000:05:00.0","vendor":"0x1077","device":"0x7322","class":"0x0c0600","rdma_dev":"qib0","netdev":"ib1","driver":"ib_qib","rate":"40 Gb/sec (4X QDR)"}]}]}]}`, 0)
	topo := mustDiscover(t, root)
	if got := nicAddrs(topo); !slices.Equal(got, []string{"0000:04:00.0", "0000:05:00.0"}) {
		t.Fatalf("NICs = %v, want both 0x0c06 HCAs", got)
	}
	cx2, _ := topo.NIC("0000:04:00.0")
	if cx2.RDMA != "mlx4_0" || cx2.Driver != "mlx4_core" || cx2.LinkLayer != "InfiniBand" || cx2.Netdev != "ib0" || cx2.Uverbs == "" || cx2.TotalVFs != 0 {
		t.Errorf("ConnectX-2 = %+v", cx2)
	}
	qib, _ := topo.NIC("0000:05:00.0")
	if qib.RDMA != "qib0" || qib.Driver != "ib_qib" || qib.Vendor != 0x1077 || len(qib.Ports) != 1 || qib.Ports[0].RateGbps != 40 {
		t.Errorf("TrueScale = %+v", qib)
	}
	if c := topo.Class("0000:03:00.0", "0000:04:00.0"); c != topology.PIX {
		t.Errorf("GPU x ConnectX-2 = %s, want PIX", c)
	}
	if r, _ := topo.Rail("0000:03:00.0"); r.NIC != "0000:04:00.0" {
		t.Errorf("rail = %+v", r)
	}
	if len(topo.Warnings) != 0 {
		t.Errorf("warnings: %v", topo.Warnings)
	}
}

// A server's onboard VGA of a GPU vendor (ATI ES1000 behind the chipset,
// 1002:515e class 0x0300, radeon or no driver) is no GPU; an AMD VGA bound
// to amdgpu, an AMD Instinct (0x0380, 0x1200) and NVIDIA VGA/3D
// controllers are.
func TestBMCVGAIsNotAGPU(t *testing.T) {
	root := generate(t, `{"id":"bmc-vga","tree":[
 {"kind":"root","domain_bus":"pci0000:00","numa":0,"children":[
  {"kind":"root_port","bdf":"0000:00:1c.0","children":[
   {"kind":"other","bdf":"0000:08:01.0","vendor":"0x1002","device":"0x515e","class":"0x030000","driver":"radeon"}]},
  {"kind":"root_port","bdf":"0000:00:1c.4","children":[
   {"kind":"other","bdf":"0000:09:01.0","vendor":"0x1002","device":"0x515e","class":"0x030000"}]},
  {"kind":"root_port","bdf":"0000:00:01.0","children":[
   {"kind":"gpu","bdf":"0000:11:00.0","vendor":"0x1002","device":"0x744c","class":"0x030000","driver":"amdgpu"},
   {"kind":"gpu","bdf":"0000:11:00.1","vendor":"0x1002","device":"0x740f","class":"0x038000"},
   {"kind":"gpu","bdf":"0000:11:00.2","vendor":"0x1002","device":"0x74a1","class":"0x120000"},
   {"kind":"gpu","bdf":"0000:11:00.3","vendor":"0x10de","device":"0x2230","class":"0x030000"},
   {"kind":"gpu","bdf":"0000:11:00.4","vendor":"0x10de","device":"0x1eb8","class":"0x030200"},
   {"kind":"nic","bdf":"0000:11:00.5","rdma_dev":"mlx5_0","netdev":"enp17s0f5np0","link_layer":"Ethernet"}]}]}]}`, 0)
	topo := mustDiscover(t, root)
	want := []string{"0000:11:00.0", "0000:11:00.1", "0000:11:00.2", "0000:11:00.3", "0000:11:00.4"}
	if got := gpuAddrs(topo); !slices.Equal(got, want) {
		t.Fatalf("GPUs = %v, want %v (no onboard ES1000)", got, want)
	}
	for _, r := range topo.Rails {
		if strings.HasPrefix(r.GPU, "0000:08:") || strings.HasPrefix(r.GPU, "0000:09:") {
			t.Errorf("the onboard VGA got a rail: %+v", r)
		}
	}
	// Still in the PCI tree, identified as it is.
	if d, ok := topo.Device("0000:08:01.0"); !ok || d.Vendor != 0x1002 || d.Class != 0x030000 || d.Driver != "radeon" {
		t.Errorf("ES1000 device = %+v, %v", d, ok)
	}
}

func TestIsGPURules(t *testing.T) {
	for _, c := range []struct {
		vendor uint16
		class  uint32
		driver string
		want   bool
	}{
		{0x10de, 0x030200, "", true},
		{0x10de, 0x030000, "nvidia", true},
		{0x10de, 0x030000, "", true},
		{0x10de, 0x068000, "", false}, // NVSwitch
		{0x1002, 0x030000, "amdgpu", true},
		{0x1002, 0x030000, "radeon", false},
		{0x1002, 0x030000, "", false},
		{0x1002, 0x038000, "", true},
		{0x1002, 0x030200, "", true},
		{0x1002, 0x120000, "", true},
		{0x1002, 0x040300, "snd_hda_intel", false}, // the GPU's audio function
		{0x1a03, 0x030000, "ast", false},           // ASPEED BMC
		{0x102b, 0x030000, "mgag200", false},       // Matrox BMC
	} {
		d := topology.PCIDevice{Vendor: c.vendor, Class: c.class, Driver: c.driver}
		if got := isGPU(d); got != c.want {
			t.Errorf("isGPU(%04x class %06x driver %q) = %v, want %v", c.vendor, c.class, c.driver, got, c.want)
		}
	}
}

// Functions in a PCI domain wider than four hex digits (Intel VMD: the
// domain 10000 hangs below the VMD controller 0000:00:0e.0) are discovered,
// in their own host bridge, with their VFs.
func TestWidePCIDomainsAreDiscovered(t *testing.T) {
	root := generate(t, `{"id":"vmd","tree":[
 {"kind":"root","domain_bus":"pci0000:00","numa":0,"children":[
  {"kind":"other","bdf":"0000:00:0e.0","vendor":"0x8086","device":"0x467f","class":"0x010400"},
  {"kind":"root_port","bdf":"0000:00:01.0","children":[{"kind":"gpu","bdf":"0000:01:00.0"}]}]},
 {"kind":"root","domain_bus":"pci10000:00","numa":0,"children":[
  {"kind":"root_port","bdf":"10000:00:02.0","children":[
   {"kind":"switch","bdf":"10000:01:00.0","children":[
    {"kind":"switch_port","bdf":"10000:02:00.0","children":[{"kind":"gpu","bdf":"10000:03:00.0"}]},
    {"kind":"switch_port","bdf":"10000:02:01.0","children":[{"kind":"nic","bdf":"10000:04:00.0","rdma_dev":"mlx5_0","netdev":"ibp4s0","class":"0x020700"}]}]}]}]}]}`, 2)
	// Move the VMD domain below the VMD controller, where the kernel puts
	// it: /sys/devices/pci0000:00/0000:00:0e.0/pci10000:00/...
	vmd := filepath.Join(root, "devices/pci0000:00/0000:00:0e.0")
	if err := os.Rename(filepath.Join(root, "devices/pci10000:00"), filepath.Join(vmd, "pci10000:00")); err != nil {
		t.Fatal(err)
	}
	links, _ := filepath.Glob(filepath.Join(root, "bus/pci/devices/10000:*"))
	for _, l := range links {
		target, _ := os.Readlink(l)
		if err := os.Remove(l); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(strings.Replace(target, "devices/pci10000:00", "devices/pci0000:00/0000:00:0e.0/pci10000:00", 1), l); err != nil {
			t.Fatal(err)
		}
	}
	topo := mustDiscover(t, root)
	if got := gpuAddrs(topo); !slices.Equal(got, []string{"0000:01:00.0", "10000:03:00.0"}) {
		t.Fatalf("GPUs = %v", got)
	}
	if got := nicAddrs(topo); !slices.Equal(got, []string{"10000:04:00.0"}) {
		t.Fatalf("NICs = %v", got)
	}
	n, _ := topo.NIC("10000:04:00.0")
	if len(n.VFs) != 2 || !strings.HasPrefix(n.VFs[0].PCI, "10000:") {
		t.Errorf("VFs = %+v", n.VFs)
	}
	if d, _ := topo.Device("10000:04:00.0"); d.HostBridge != "pci10000:00" || d.Parent != "10000:02:01.0" {
		t.Errorf("NIC placement = %+v", d)
	}
	if c := topo.Class("10000:03:00.0", "10000:04:00.0"); c != topology.PIX {
		t.Errorf("class in the VMD domain = %s, want PIX", c)
	}
	if c := topo.Class("0000:01:00.0", "10000:04:00.0"); c != topology.NODE {
		t.Errorf("class across domains = %s, want NODE", c)
	}
	if len(topo.Warnings) != 0 {
		t.Errorf("warnings: %v", topo.Warnings)
	}
}

// An entry of bus/pci/devices that is no PCI address is warned about, not
// dropped silently.
func TestMalformedPCIEntryIsWarned(t *testing.T) {
	root := generate(t, smallMachine, 0)
	if err := os.Symlink("../../../devices/pci0000:00", filepath.Join(root, "bus/pci/devices/0000:zz:00.0")); err != nil {
		t.Fatal(err)
	}
	topo := mustDiscover(t, root)
	if !hasWarning(topo, "bus/pci/devices/0000:zz:00.0: skipped: not a PCI address") {
		t.Errorf("warnings = %v", topo.Warnings)
	}
}

// A GPU with two NICs under its switch, the lower-addressed one DOWN: the
// rail takes the ACTIVE one; the DOWN port is still reported.
func TestRailAvoidsDownPortFromSysfs(t *testing.T) {
	root := generate(t, `{"id":"two-nics","tree":[
 {"kind":"root","domain_bus":"pci0000:00","numa":0,"children":[
  {"kind":"root_port","bdf":"0000:00:01.0","children":[
   {"kind":"switch","bdf":"0000:01:00.0","children":[
    {"kind":"switch_port","bdf":"0000:02:00.0","children":[{"kind":"gpu","bdf":"0000:03:00.0"}]},
    {"kind":"switch_port","bdf":"0000:02:01.0","children":[{"kind":"nic","bdf":"0000:04:00.0","rdma_dev":"mlx5_0","class":"0x020700"}]},
    {"kind":"switch_port","bdf":"0000:02:02.0","children":[{"kind":"nic","bdf":"0000:05:00.0","rdma_dev":"mlx5_1","class":"0x020700"}]}]}]}]}]}`, 0)
	if r, _ := mustDiscover(t, root).Rail("0000:03:00.0"); r.NIC != "0000:04:00.0" {
		t.Fatalf("all ACTIVE: rail %+v, want the lowest address", r)
	}
	if err := fakesysfs.SetPortState(root, "mlx5_0", 1, fakesysfs.PortDown); err != nil {
		t.Fatal(err)
	}
	topo := mustDiscover(t, root)
	if r, _ := topo.Rail("0000:03:00.0"); r.NIC != "0000:05:00.0" || r.Class != topology.PIX {
		t.Errorf("mlx5_0 DOWN: rail %+v, want mlx5_1 (ACTIVE, as close)", r)
	}
	if !hasWarning(topo, "mlx5_0 port 1 is DOWN (Disabled)") || hasWarning(topo, "railed") {
		t.Errorf("warnings = %v", topo.Warnings)
	}
	// Both DOWN: the rail goes back to the first one and says so.
	if err := fakesysfs.SetPortState(root, "mlx5_1", 1, fakesysfs.PortDown); err != nil {
		t.Fatal(err)
	}
	topo = mustDiscover(t, root)
	if r, _ := topo.Rail("0000:03:00.0"); r.NIC != "0000:04:00.0" || !hasWarning(topo, "GPU railed to mlx5_0 (0000:04:00.0) whose port is not ACTIVE") {
		t.Errorf("both DOWN: rail %+v, warnings %v", r, topo.Warnings)
	}
}

// azureNDv4Flat is an NDv4-like VM as sysfs shows it: every GPU and HCA
// alone on its own PCI domain (Hyper-V vPCI), NUMA from the VM's ACPI.
func azureNDv4Flat() string {
	type dev struct {
		addr string
		numa int
		gpu  bool
	}
	devs := []dev{
		{"0001:00:00.0", 1, true}, {"0002:00:00.0", 1, true}, {"0003:00:00.0", 0, true}, {"0004:00:00.0", 0, true},
		{"000b:00:00.0", 3, true}, {"000c:00:00.0", 3, true}, {"000d:00:00.0", 2, true}, {"000e:00:00.0", 2, true},
		{"0101:00:00.0", 1, false}, {"0102:00:00.0", 1, false}, {"0103:00:00.0", 0, false}, {"0104:00:00.0", 0, false},
		{"0105:00:00.0", 3, false}, {"0106:00:00.0", 3, false}, {"0107:00:00.0", 2, false}, {"0108:00:00.0", 2, false},
	}
	var roots []string
	for i, d := range devs {
		child := `{"kind":"gpu","bdf":"` + d.addr + `"}`
		if !d.gpu {
			child = `{"kind":"nic","bdf":"` + d.addr + `","class":"0x020700","rdma_dev":"mlx5_` + string(rune('0'+i-8)) + `"}`
		}
		roots = append(roots, `{"kind":"root","domain_bus":"pci`+d.addr[:4]+`:00","numa":`+string(rune('0'+d.numa))+`,"children":[`+child+`]}`)
	}
	return `{"id":"ndv4-flat","tree":[` + strings.Join(roots, ",") + `]}`
}

// With Azure's NCCL topology file, the NDv4 VM's GPU x HCA pairs under one
// virtual bridge are PIX (NCCL's view, which enables GPUDirect RDMA) where
// sysfs alone says NODE; pairs across NUMA nodes stay SYS.
func TestNCCLTopologyFileClassifiesCloudVM(t *testing.T) {
	root := generate(t, azureNDv4Flat(), 0)
	flat := mustDiscover(t, root)
	sys, err := nccltopo.ParseFile("../nccltopo/testdata/ndv4-topo.xml")
	if err != nil {
		t.Fatal(err)
	}
	topo, err := Options{NCCLTopology: sys, NCCLTopologyName: "ndv4-topo.xml"}.Discover(context.Background(), root)
	if err != nil {
		t.Fatal(err)
	}
	pairs := map[[2]string][2]topology.Class{ // flat, with the file
		{"0003:00:00.0", "0103:00:00.0"}: {topology.NODE, topology.PIX},
		{"0003:00:00.0", "0104:00:00.0"}: {topology.NODE, topology.PIX},
		{"0001:00:00.0", "0102:00:00.0"}: {topology.NODE, topology.PIX},
		{"000e:00:00.0", "0107:00:00.0"}: {topology.NODE, topology.PIX},
		{"0003:00:00.0", "0101:00:00.0"}: {topology.SYS, topology.SYS},
	}
	for p, want := range pairs {
		if got := flat.Class(p[0], p[1]); got != want[0] {
			t.Errorf("flat %v = %s, want %s", p, got, want[0])
		}
		if got := topo.Class(p[0], p[1]); got != want[1] {
			t.Errorf("with the file %v = %s, want %s", p, got, want[1])
		}
	}
	for _, l := range topo.Links {
		if l.Source != "nccl-topo" {
			t.Errorf("link %+v does not come from the file", l)
		}
		if l.Class == topology.NODE {
			t.Errorf("link %+v: the file has no NODE pairs", l)
		}
	}
	for _, r := range topo.Rails {
		if r.Class != topology.PIX {
			t.Errorf("rail %+v, want PIX with the file", r)
		}
	}
	for _, r := range flat.Rails {
		if r.Class != topology.NODE {
			t.Errorf("flat rail %+v, want NODE", r)
		}
	}
	if len(topo.Warnings) != 0 {
		t.Errorf("warnings: %v", topo.Warnings)
	}
}

// A file that misses some of the node's devices, and lists some the node
// lacks: the pairs it cannot classify keep their sysfs class, and both
// problems are warnings.
func TestNCCLTopologyFileMismatchesAreWarned(t *testing.T) {
	root := generate(t, smallMachine, 0)
	sys, err := nccltopo.Parse(strings.NewReader(`<system version="1">
 <cpu numaid="0"><pci busid="0000:01:00.0" class="0x060400">
   <pci busid="0000:03:00.0" class="0x030200"/>
   <pci busid="0000:99:00.0" class="0x020700"/>
 </pci></cpu>
 <cpu numaid="1"><pci busid="0000:82:00.0" class="0x020700"/></cpu>
</system>`))
	if err != nil {
		t.Fatal(err)
	}
	topo, err := Options{NCCLTopology: sys, NCCLTopologyName: "t.xml"}.Discover(context.Background(), root)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{
		"0000:81:00.0: GPU not in t.xml: its classes come from sysfs",
		"0000:04:00.0: NIC mlx5_0 not in t.xml: its classes come from sysfs",
		"t.xml lists 1 GPUs or NICs that sysfs does not have (a file for another machine?): 0000:99:00.0",
	} {
		if !hasWarning(topo, w) {
			t.Errorf("no warning %q in %v", w, topo.Warnings)
		}
	}
	// From the file: GPU0 x mlx5_1 across CPUs of different numaid.
	if l := topo.Links[1]; l.NIC != "0000:82:00.0" || l.Class != topology.SYS || l.Source != "nccl-topo" {
		t.Errorf("GPU0 x mlx5_1 = %+v", l)
	}
	// From sysfs: GPU0 x mlx5_0 (PIX there).
	if l := topo.Links[0]; l.Class != topology.PIX || l.Source != "" {
		t.Errorf("GPU0 x mlx5_0 = %+v", l)
	}
}
