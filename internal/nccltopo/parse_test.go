package nccltopo

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/railyard-io/railyard/internal/pciaddr"
	"github.com/railyard-io/railyard/internal/topology"
)

func parseFile(t *testing.T, name string) (*System, *Index) {
	t.Helper()
	s, err := ParseFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return s, NewIndex(s)
}

func classOf(t *testing.T, ix *Index, a, b string) topology.Class {
	t.Helper()
	da, ok := ix.ByBusID(a)
	if !ok {
		t.Fatalf("%s not found", a)
	}
	db, ok := ix.ByBusID(b)
	if !ok {
		t.Fatalf("%s not found", b)
	}
	if c, back := Class(da, db), Class(db, da); c != back {
		t.Fatalf("Class(%s, %s) = %s but reversed %s", a, b, c, back)
	}
	return Class(da, db)
}

// Azure NDv4: two GPUs and two HCAs under one virtual bridge per NUMA node.
func TestAzureNDv4File(t *testing.T) {
	s, ix := parseFile(t, "ndv4-topo.xml")
	if s.Version != 1 || len(s.CPUs) != 4 {
		t.Fatalf("version %d, %d cpus", s.Version, len(s.CPUs))
	}
	c0 := s.CPUs[0]
	if c0.NUMAID != 0 || c0.Affinity != "00000000,00000000,00ffffff" || c0.Vendor != "AuthenticAMD" || len(c0.PCIs) != 1 {
		t.Errorf("cpu[0] = %+v", c0)
	}
	br := c0.PCIs[0]
	if br.BusID != "ffff:ff:01.0" || br.Class != 0x060400 || br.LinkWidth != 16 || br.LinkSpeed != "16 GT/s" || len(br.Children) != 4 {
		t.Errorf("bridge = %+v", br)
	}
	if g := br.Children[0]; g.Addr != (pciaddr.Addr{Domain: 3}) || g.Class != 0x030200 || g.GPU != nil {
		t.Errorf("first child = %+v", g)
	}
	if len(ix.GPUs) != 8 || len(ix.NICs) != 8 || len(ix.Duplicates) != 0 {
		t.Errorf("%d GPUs, %d NICs, duplicates %v", len(ix.GPUs), len(ix.NICs), ix.Duplicates)
	}
	for _, c := range []struct {
		a, b string
		want topology.Class
	}{
		{"0003:00:00.0", "0103:00:00.0", topology.PIX},
		{"0003:00:00.0", "0104:00:00.0", topology.PIX},
		{"0001:00:00.0", "0102:00:00.0", topology.PIX},
		{"0003:00:00.0", "0101:00:00.0", topology.SYS},
		{"000e:00:00.0", "0108:00:00.0", topology.PIX},
		{"000E:00:00.0", "00000108:00:00.0", topology.PIX}, // case and domain width
		{"000b:00:00.0", "0107:00:00.0", topology.SYS},
	} {
		if got := classOf(t, ix, c.a, c.b); got != c.want {
			t.Errorf("%s x %s = %s, want %s", c.a, c.b, got, c.want)
		}
	}
	if _, ok := ix.ByBusID("0005:00:00.0"); ok {
		t.Error("0005:00:00.0 is not in the file")
	}
}

// NCCL's own dump form: nested switches, <gpu>, <nic><net>, a NIC without
// a PCI function, NVML-style eight-digit and upper-case bus IDs.
func TestNestedDump(t *testing.T) {
	s, ix := parseFile(t, "dump-nested.xml")
	gpu := s.CPUs[0].PCIs[0].Children[0].Children[0]
	if gpu.GPU == nil || *gpu.GPU != (GPU{Dev: 0, SM: 80, Rank: 0, GDR: true}) || gpu.Addr.String() != "0000:07:00.0" {
		t.Errorf("gpu = %+v %+v", gpu, gpu.GPU)
	}
	nic := s.CPUs[1].PCIs[0].Children[1].NIC
	want := Net{Name: "mlx5_2", Dev: 2, Speed: 200000, Port: 2, GUID: "0x1c34da0300a1b2c5", MaxConn: 131072, GDR: true}
	if nic == nil || len(nic.Nets) != 2 || nic.Nets[1] != want {
		t.Errorf("nic = %+v", nic)
	}
	for _, c := range []struct {
		a, b string
		want topology.Class
	}{
		{"0000:07:00.0", "0000:0c:00.0", topology.PIX}, // one switch
		{"0000:0f:00.0", "0000:0c:00.0", topology.PXB}, // two switches below a common one
		{"0000:07:00.0", "0000:20:00.0", topology.PHB}, // through the CPU
		{"0000:07:00.0", "0000:8c:00.0", topology.SYS},
		{"0000:87:00.0", "0000:8c:00.0", topology.PIX},
		{"07:00.0", "0c:00.0", topology.PIX}, // short form, domain 0
	} {
		if got := classOf(t, ix, c.a, c.b); got != c.want {
			t.Errorf("%s x %s = %s, want %s", c.a, c.b, got, c.want)
		}
	}
	// Ports of one NIC are found by net name; the virtual NIC hangs off
	// its CPU.
	g2, _ := ix.ByBusID("0000:87:00.0")
	for name, want := range map[string]topology.Class{"mlx5_1": topology.PIX, "mlx5_2": topology.PIX, "efa_virtual0": topology.PHB, "mlx5_0": topology.SYS} {
		d, ok := ix.ByNetName(name)
		if !ok {
			t.Fatalf("net %s not found", name)
		}
		if got := Class(g2, d); got != want {
			t.Errorf("GPU2 x %s = %s, want %s", name, got, want)
		}
	}
	if Class(Device{}, g2) != topology.ClassUnknown {
		t.Error("the zero Device must have no class")
	}
	if fmt.Sprint(ix.GPUs) != "[0000:07:00.0 0000:0f:00.0 0000:87:00.0]" || fmt.Sprint(ix.NICs) != "[0000:0c:00.0 0000:20:00.0 0000:8c:00.0]" {
		t.Errorf("GPUs %v, NICs %v", ix.GPUs, ix.NICs)
	}
}

// Two <cpu> elements with one numaid (NCCL writes that for a NUMA node
// with several root complexes) are NODE apart.
func TestSameNUMAIsNODE(t *testing.T) {
	s, err := Parse(strings.NewReader(`<system version="1">
 <cpu numaid="0"><pci busid="0000:01:00.0" class="0x030200"/></cpu>
 <cpu numaid="0"><pci busid="0000:41:00.0" class="0x020700"/></cpu>
 <cpu><pci busid="0000:81:00.0" class="0x020700"/></cpu>
 <cpu><pci busid="0000:c1:00.0" class="0x030200"/></cpu>
</system>`))
	if err != nil {
		t.Fatal(err)
	}
	ix := NewIndex(s)
	if c := classOf(t, ix, "0000:01:00.0", "0000:41:00.0"); c != topology.NODE {
		t.Errorf("same numaid: %s, want NODE", c)
	}
	if c := classOf(t, ix, "0000:81:00.0", "0000:c1:00.0"); c != topology.SYS {
		t.Errorf("two CPUs without numaid: %s, want SYS", c)
	}
}

// TestParseBusID: bus IDs follow pciaddr's rules (either case, a domain of
// 4 to 8 digits or none), with white space around them ignored.
func TestParseBusID(t *testing.T) {
	for in, want := range map[string]string{
		"0000:18:00.1": "0000:18:00.1", "00000000:18:00.1": "0000:18:00.1", "10000:e1:1F.7": "10000:e1:1f.7",
		"FFFF:FF:01.0": "ffff:ff:01.0", "18:00.1": "0000:18:00.1", " 0001:00:00.0\n": "0001:00:00.0",
	} {
		a, err := parseBusID(in)
		if err != nil || a.String() != want {
			t.Errorf("parseBusID(%q) = %s, %v; want %s", in, a, err, want)
		}
	}
	// "1:00:00.0": a domain of fewer than four digits, which no tool writes,
	// is refused since pciaddr holds the one rule.
	for _, in := range []string{"", "0000:18:20.0", "0000:18:00.8", "000000000:18:00.0", "0000:018:00.0", "0000:18:0.0", "x:18:00.0", "1:18:00.0", "0000-18-00.0", "a:b:c:d"} {
		if a, err := parseBusID(in); err == nil {
			t.Errorf("parseBusID(%q) = %s, want an error", in, a)
		}
	}
	if _, err := Parse(strings.NewReader(`<system version="1"><cpu numaid="0"><pci busid="0000:18:20.0"/></cpu></system>`)); err == nil ||
		!strings.Contains(err.Error(), `busid: PCI address "0000:18:20.0": device 0x20 is above 0x1f`) {
		t.Errorf("a busid with device 0x20: %v", err)
	}
}

func TestParseErrors(t *testing.T) {
	for name, c := range map[string]struct{ in, want string }{
		"empty":        {"", "no <system> element"},
		"not xml":      {"{\"system\": 1}", "no <system> element"},
		"wrong root":   {`<graphs version="1"/>`, "root element is <graphs>"},
		"version 2":    {`<system version="2"/>`, "version 1 only"},
		"no version":   {`<system/>`, "version 1 only"},
		"no busid":     {`<system version="1"><cpu numaid="0"><pci class="0x0302"/></cpu></system>`, "cpu[0].pci[0]: <pci> without busid"},
		"bad busid":    {`<system version="1"><cpu><pci busid="0000:zz:00.0"/></cpu></system>`, "cpu[0].pci[0]: busid: PCI address \"0000:zz:00.0\": bus is not hex"},
		"bad class":    {`<system version="1"><cpu><pci busid="0000:01:00.0" class="VGA"/></cpu></system>`, `class "VGA"`},
		"bad numaid":   {`<system version="1"><cpu numaid="zero"/></system>`, `numaid="zero"`},
		"bad net dev":  {`<system version="1"><cpu><nic><net name="a" dev="x"/></nic></cpu></system>`, `cpu[0].nic[0].net[0]: dev="x"`},
		"two gpus":     {`<system version="1"><cpu><pci busid="0000:01:00.0"><gpu/><gpu/></pci></cpu></system>`, "two <gpu> elements"},
		"unterminated": {`<system version="1"><cpu numaid="0">`, "unexpected EOF"},
		"mismatched":   {`<system version="1"><cpu></pci></system>`, "element <cpu> closed by </pci>"},
		"trailing":     {`<system version="1"/><system version="1"/>`, "element <system> after </system>"},
		"deep":         {`<system version="1"><cpu>` + strings.Repeat(`<pci busid="0000:01:00.0">`, MaxDepth) + strings.Repeat(`</pci>`, MaxDepth) + `</cpu></system>`, "nesting deeper than 64"},
	} {
		_, err := Parse(strings.NewReader(c.in))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", name, err, c.want)
		}
	}
	big := strings.NewReader(`<system version="1">` + strings.Repeat(" ", MaxBytes))
	if _, err := Parse(big); !errors.Is(err, ErrFormat) {
		t.Errorf("oversized input: %v, want ErrFormat", err)
	}
	if _, err := ParseFile("testdata/missing.xml"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}

// Elements and attributes NCCL ignores (or that newer NCCL versions add)
// are ignored; comments and a declaration are fine.
func TestUnknownElementsAreIgnored(t *testing.T) {
	s, err := Parse(strings.NewReader(`<?xml version="1.0"?>
<!-- comment -->
<system version="1" name="test">
  <cpu numaid="0" extra="1"><future><pci busid="0000:99:00.0"/></future>
    <pci busid="0000:01:00.0" class="0x030200"><pcilink target="0000:02:00.0"/><gpu dev="0"><c2c bw="1"/></gpu></pci>
  </cpu>
</system>
`))
	if err != nil {
		t.Fatal(err)
	}
	ix := NewIndex(s)
	if s.Name != "test" || len(s.CPUs[0].PCIs) != 1 || len(ix.GPUs) != 1 {
		t.Errorf("system = %+v, GPUs %v", s, ix.GPUs)
	}
	if _, ok := ix.ByBusID("0000:99:00.0"); ok {
		t.Error("a <pci> inside an unknown element must not be indexed")
	}
}

func TestDuplicateBusIDsAreReported(t *testing.T) {
	s, err := Parse(strings.NewReader(`<system version="1"><cpu numaid="0"><pci busid="0000:01:00.0" class="0x030200"/></cpu><cpu numaid="1"><pci busid="0000:01:00.0" class="0x020700"/></cpu></system>`))
	if err != nil {
		t.Fatal(err)
	}
	ix := NewIndex(s)
	d, _ := ix.ByBusID("0000:01:00.0")
	if fmt.Sprint(ix.Duplicates) != "[0000:01:00.0]" || d.numa != 0 {
		t.Errorf("duplicates %v, first numa %d", ix.Duplicates, d.numa)
	}
}
