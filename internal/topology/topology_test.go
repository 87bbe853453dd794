package topology

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// inv builds an inventory from "addr parent hostbridge numa kind" lines,
// kind one of bridge, gpu, nic.
func inv(t *testing.T, rows ...string) Inventory {
	t.Helper()
	var in Inventory
	hbs := map[string]bool{}
	for _, r := range rows {
		var addr, parent, hb, kind string
		var numa int
		if _, err := fmt.Sscan(r, &addr, &parent, &hb, &numa, &kind); err != nil {
			t.Fatalf("row %q: %v", r, err)
		}
		if parent == "-" {
			parent = ""
		}
		d := PCIDevice{Address: addr, Parent: parent, HostBridge: hb, NUMA: numa, Bridge: kind == "bridge"}
		in.Devices = append(in.Devices, d)
		if !hbs[hb] {
			hbs[hb] = true
			in.HostBridges = append(in.HostBridges, HostBridge{Name: hb, NUMA: numa})
		}
		switch kind {
		case "gpu":
			in.GPUs = append(in.GPUs, GPU{PCI: addr, NUMA: numa})
		case "nic":
			in.NICs = append(in.NICs, NIC{PCI: addr, NUMA: numa, RDMA: "rdma-" + addr, Ports: []Port{activePort}})
		}
	}
	return in
}

// A two-level switch tree under one root port, a second root port, a
// second host bridge of the same NUMA node and one of another node.
var fabric = []string{
	"00:01 - pciA 0 bridge",     // root port
	"01:00 00:01 pciA 0 bridge", // upper switch upstream
	"02:00 01:00 pciA 0 bridge", // downstream
	"02:01 01:00 pciA 0 bridge", // downstream
	"03:00 02:00 pciA 0 bridge", // leaf switch 1 upstream
	"04:00 03:00 pciA 0 bridge", // downstream
	"04:01 03:00 pciA 0 bridge", // downstream
	"05:00 04:00 pciA 0 gpu",    // GPU under leaf 1
	"06:00 04:01 pciA 0 nic",    // NIC under leaf 1 -> PIX
	"07:00 02:01 pciA 0 nic",    // NIC under upper switch -> PXB
	"00:02 - pciA 0 bridge",     // second root port
	"08:00 00:02 pciA 0 nic",    // -> PHB
	"10:00 - pciB 0 nic",        // other host bridge, same NUMA -> NODE
	"80:00 - pciC 1 nic",        // other NUMA -> SYS
	"09:00 - pciA 0 nic",        // directly on the host bridge -> PHB
}

func TestDistanceClasses(t *testing.T) {
	topo := Build(inv(t, fabric...))
	want := map[string]Class{"06:00": PIX, "07:00": PXB, "08:00": PHB, "09:00": PHB, "10:00": NODE, "80:00": SYS}
	for nic, c := range want {
		if got := topo.Class("05:00", nic); got != c {
			t.Errorf("class GPU x %s = %s, want %s", nic, got, c)
		}
	}
	if topo.Class("nope", "06:00") != ClassUnknown || topo.Class("05:00", "nope") != ClassUnknown {
		t.Error("unknown devices must have ClassUnknown")
	}
	if r, ok := topo.Rail("05:00"); !ok || r.NIC != "06:00" || r.Class != PIX {
		t.Errorf("rail = %+v, %v", r, ok)
	}
}

func TestTwoFunctionsUnderOneRootPortArePIX(t *testing.T) {
	topo := Build(inv(t, "00:01 - pciA 0 bridge", "01:00.0 00:01 pciA 0 gpu", "01:00.1 00:01 pciA 0 nic"))
	if c := topo.Class("01:00.0", "01:00.1"); c != PIX {
		t.Errorf("class = %s, want PIX", c)
	}
}

func TestParentLoopDoesNotHang(t *testing.T) {
	topo := Build(inv(t, "a b pciA 0 bridge", "b a pciA 0 bridge", "g a pciA 0 gpu", "n b pciA 0 nic"))
	if c := topo.Class("g", "n"); c == ClassUnknown {
		t.Errorf("class in a corrupt tree = %s, want some class", c)
	}
}

func TestSYSRailIsWarned(t *testing.T) {
	topo := Build(inv(t, "g - pciA 0 gpu", "n - pciB 1 nic"))
	if len(topo.Warnings) != 1 || topo.Warnings[0].Message != "GPU has no NIC closer than SYS" {
		t.Errorf("warnings = %v", topo.Warnings)
	}
}

// Rails are optimal: brute force over every assignment respecting the
// per-NIC limit gives no lower total rank, on random class matrices.
func TestRailsAreOptimal(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 9))
	for trial := 0; trial < 300; trial++ {
		g, n := 1+r.IntN(6), 1+r.IntN(4)
		topo := &Topology{gpuIdx: map[string]int{}, nicIdx: map[string]int{}}
		for i := 0; i < g; i++ {
			topo.GPUs = append(topo.GPUs, GPU{PCI: fmt.Sprintf("g%d", i)})
		}
		for j := 0; j < n; j++ {
			topo.NICs = append(topo.NICs, NIC{PCI: fmt.Sprintf("n%d", j)})
		}
		for i := 0; i < g; i++ {
			for j := 0; j < n; j++ {
				topo.Links = append(topo.Links, Link{GPU: topo.GPUs[i].PCI, NIC: topo.NICs[j].PCI, Class: Classes[r.IntN(len(Classes))]})
			}
		}
		rails, err := topo.rails()
		if err != nil {
			t.Fatal(err)
		}
		limit := (g + n - 1) / n
		total, use := 0, map[string]int{}
		for _, rl := range rails {
			total += rl.Class.Rank()
			use[rl.NIC]++
			if use[rl.NIC] > limit {
				t.Fatalf("trial %d: NIC %s over its limit %d", trial, rl.NIC, limit)
			}
		}
		best := bruteRails(topo, limit)
		if total != best {
			t.Fatalf("trial %d: rails rank %d, optimum %d", trial, total, best)
		}
		again, _ := topo.rails()
		for i := range rails {
			if rails[i] != again[i] {
				t.Fatalf("trial %d: rails not deterministic", trial)
			}
		}
	}
}

func bruteRails(t *Topology, limit int) int {
	g, n := len(t.GPUs), len(t.NICs)
	use := make([]int, n)
	best := -1
	var rec func(i, sum int)
	rec = func(i, sum int) {
		if i == g {
			if best < 0 || sum < best {
				best = sum
			}
			return
		}
		for j := 0; j < n; j++ {
			if use[j] < limit {
				use[j]++
				rec(i+1, sum+t.Links[i*n+j].Class.Rank())
				use[j]--
			}
		}
	}
	rec(0, 0)
	return best
}

func TestClassNames(t *testing.T) {
	for _, c := range Classes {
		got, err := ParseClass(c.String())
		if err != nil || got != c {
			t.Errorf("ParseClass(%s) = %v, %v", c, got, err)
		}
	}
	if _, err := ParseClass("NV12"); err == nil {
		t.Error("ParseClass(NV12): no error")
	}
	if ClassUnknown.Rank() <= SYS.Rank() || !PXB.GPUDirect() || PHB.GPUDirect() {
		t.Error("rank/GPUDirect rules broken")
	}
}

// A NIC is named by its RDMA device, and by its PCI address when it has
// none (a function whose driver registered no RDMA device).
func TestNICName(t *testing.T) {
	if got := (NIC{PCI: "0000:18:00.0", RDMA: "mlx5_0"}).Name(); got != "mlx5_0" {
		t.Errorf("with an RDMA device: %q", got)
	}
	if got := (NIC{PCI: "0000:18:00.0"}).Name(); got != "0000:18:00.0" {
		t.Errorf("without one: %q", got)
	}
}
