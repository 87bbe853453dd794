package topology

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

var (
	activePort = Port{Num: 1, State: "ACTIVE", PhysState: "LinkUp"}
	downPort   = Port{Num: 1, State: "DOWN", PhysState: "Disabled"}
)

// setPorts gives the NIC at addr the given ports in an inventory.
func setPorts(in *Inventory, addr string, ports ...Port) {
	for i := range in.NICs {
		if in.NICs[i].PCI == addr {
			in.NICs[i].Ports = ports
		}
	}
}

// Two NICs under the GPU's switch, the lower-addressed one DOWN: the rail
// takes the ACTIVE one and nothing is warned about.
func TestRailPrefersActiveNICAsClose(t *testing.T) {
	in := inv(t,
		"00:01 - pciA 0 bridge",
		"01:00 00:01 pciA 0 bridge", // switch upstream
		"02:00 01:00 pciA 0 bridge",
		"02:01 01:00 pciA 0 bridge",
		"02:02 01:00 pciA 0 bridge",
		"03:00 02:00 pciA 0 gpu",
		"04:00 02:01 pciA 0 nic", // PIX, DOWN
		"05:00 02:02 pciA 0 nic", // PIX, ACTIVE
	)
	setPorts(&in, "04:00", downPort)
	setPorts(&in, "05:00", activePort)
	topo := Build(in)
	if r, _ := topo.Rail("03:00"); r.NIC != "05:00" || r.Class != PIX {
		t.Errorf("rail = %+v, want the ACTIVE PIX NIC 05:00", r)
	}
	if len(topo.Warnings) != 0 {
		t.Errorf("warnings = %v, want none", topo.Warnings)
	}
	// Healthy again: the lowest address wins the tie, as before.
	setPorts(&in, "04:00", activePort)
	if r, _ := Build(in).Rail("03:00"); r.NIC != "04:00" {
		t.Errorf("with both ACTIVE, rail = %+v, want 04:00", r)
	}
}

// The only NIC under the GPU's switch is DOWN and the healthy one is across
// the SMP interconnect: the class still decides (the rail stays PIX), and a
// warning says the rail's port is not ACTIVE.
func TestRailKeepsCloserDownNICWithWarning(t *testing.T) {
	in := inv(t,
		"00:01 - pciA 0 bridge",
		"01:00 00:01 pciA 0 gpu",
		"01:00.1 00:01 pciA 0 nic", // PIX, DOWN
		"80:00 - pciB 1 nic",       // SYS, ACTIVE
	)
	setPorts(&in, "01:00.1", downPort)
	setPorts(&in, "80:00", activePort)
	topo := Build(in)
	r, _ := topo.Rail("01:00")
	if r.NIC != "01:00.1" || r.Class != PIX {
		t.Fatalf("rail = %+v, want the DOWN PIX NIC", r)
	}
	want := "GPU railed to rdma-01:00.1 (01:00.1) whose port is not ACTIVE: no healthy NIC is as close (PIX)"
	if len(topo.Warnings) != 1 || topo.Warnings[0].Path != "01:00" || topo.Warnings[0].Message != want {
		t.Errorf("warnings = %v, want one: %s", topo.Warnings, want)
	}
}

// Two GPUs share two equally close NICs, one DOWN, and a far NIC keeps the
// share at one GPU per NIC: the healthy close NIC takes both (the DOWN NIC's
// share moves to it) instead of leaving one GPU on a dead port or sending
// it across the SMP interconnect.
func TestRailShareOfDownNICMovesToHealthy(t *testing.T) {
	in := inv(t,
		"00:01 - pciA 0 bridge",
		"01:00 00:01 pciA 0 bridge",
		"02:00 01:00 pciA 0 bridge",
		"02:01 01:00 pciA 0 bridge",
		"02:02 01:00 pciA 0 bridge",
		"02:03 01:00 pciA 0 bridge",
		"03:00 02:00 pciA 0 gpu",
		"04:00 02:01 pciA 0 gpu",
		"05:00 02:02 pciA 0 nic",
		"06:00 02:03 pciA 0 nic",
		"80:00 - pciB 1 nic",
	)
	setPorts(&in, "05:00", downPort)
	setPorts(&in, "06:00", activePort)
	setPorts(&in, "80:00", activePort)
	topo := Build(in)
	for _, g := range []string{"03:00", "04:00"} {
		if r, _ := topo.Rail(g); r.NIC != "06:00" {
			t.Errorf("rail of %s = %+v, want the healthy 06:00", g, r)
		}
	}
	if len(topo.Warnings) != 0 {
		t.Errorf("warnings = %v", topo.Warnings)
	}
}

// Rails are lexicographically optimal on random class matrices with random
// port health: minimal total rank, then fewest GPUs on unhealthy NICs, where
// every NIC has ceil(G/N) slots and an unhealthy NIC's slots may seat GPUs
// on healthy NICs instead; checked against brute force over every GPU ->
// NIC map that fits those slots.
func TestRailsAreOptimalWithHealth(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 13))
	for trial := 0; trial < 300; trial++ {
		g, n := 1+r.IntN(6), 1+r.IntN(4)
		topo := &Topology{gpuIdx: map[string]int{}, nicIdx: map[string]int{}}
		for i := 0; i < g; i++ {
			topo.GPUs = append(topo.GPUs, GPU{PCI: fmt.Sprintf("g%d", i)})
		}
		for j := 0; j < n; j++ {
			nic := NIC{PCI: fmt.Sprintf("n%d", j), Ports: []Port{activePort}}
			if r.IntN(3) == 0 {
				nic.Ports = []Port{downPort}
			}
			topo.NICs = append(topo.NICs, nic)
			topo.nicIdx[nic.PCI] = j
		}
		for i := 0; i < g; i++ {
			for j := 0; j < n; j++ {
				topo.Links = append(topo.Links, Link{GPU: topo.GPUs[i].PCI, NIC: topo.NICs[j].PCI, Class: Classes[r.IntN(len(Classes))]})
			}
		}
		limit := (g + n - 1) / n
		rails, err := topo.rails()
		if err != nil {
			t.Fatal(err)
		}
		rank, down, count := 0, 0, make([]int, n)
		for i, rl := range rails {
			if rl.GPU != topo.GPUs[i].PCI {
				t.Fatalf("trial %d: rail %d is for %s", trial, i, rl.GPU)
			}
			rank += rl.Class.Rank()
			j := topo.nicIdx[rl.NIC]
			if !topo.NICs[j].Healthy() {
				down++
			}
			count[j]++
		}
		if !fits(topo, count, limit) {
			t.Fatalf("trial %d: NIC use %v does not fit %d slots per NIC", trial, count, limit)
		}
		again, _ := topo.rails()
		if !slices.Equal(rails, again) {
			t.Fatalf("trial %d: rails not deterministic", trial)
		}
		bestRank, bestDown := bruteRailsHealth(topo, limit)
		if rank != bestRank || down != bestDown {
			t.Fatalf("trial %d: rails (rank %d, %d unhealthy), optimum (%d, %d)", trial, rank, down, bestRank, bestDown)
		}
	}
}

// fits reports whether GPUs per NIC fit the slots: an unhealthy NIC seats
// at most limit GPUs itself, and healthy NICs' GPUs beyond their limit sit
// in the unhealthy NICs' free slots.
func fits(t *Topology, count []int, limit int) bool {
	over, spare := 0, 0
	for j, c := range count {
		if t.NICs[j].Healthy() {
			over += max(0, c-limit)
			continue
		}
		if c > limit {
			return false
		}
		spare += limit - c
	}
	return over <= spare
}

func bruteRailsHealth(t *Topology, limit int) (int, int) {
	g, n := len(t.GPUs), len(t.NICs)
	count := make([]int, n)
	bestRank, bestDown := -1, -1
	var rec func(i, rank, down int)
	rec = func(i, rank, down int) {
		if i == g {
			if fits(t, count, limit) && (bestRank < 0 || rank < bestRank || (rank == bestRank && down < bestDown)) {
				bestRank, bestDown = rank, down
			}
			return
		}
		for j := 0; j < n; j++ {
			count[j]++
			d := 0
			if !t.NICs[j].Healthy() {
				d = 1
			}
			rec(i+1, rank+t.Links[i*n+j].Class.Rank(), down+d)
			count[j]--
		}
	}
	rec(0, 0, 0)
	return bestRank, bestDown
}

func TestNICHealthy(t *testing.T) {
	for _, c := range []struct {
		ports  []Port
		want   bool
		reason string
	}{
		{nil, false, "no RDMA ports"},
		{[]Port{activePort}, true, ""},
		{[]Port{{Num: 1, State: "ACTIVE"}}, true, ""},
		{[]Port{activePort, downPort}, false, "port 1 is DOWN/Disabled"},
		{[]Port{{Num: 1, State: "ACTIVE", PhysState: "Polling"}}, false, "port 1 is ACTIVE/Polling"},
		{[]Port{{Num: 1, State: "INIT", PhysState: "LinkUp"}}, false, "port 1 is INIT/LinkUp"},
		// A state file discovery could not read (a FIFO) or parse.
		{[]Port{{Num: 1, PhysState: "LinkUp"}}, false, "port 1 is unreadable/LinkUp"},
	} {
		n := NIC{PCI: "p", Ports: c.ports}
		// A NIC whose counters degrade it is unhealthy, its ports' reason
		// first.
		d := NIC{PCI: "p", Ports: c.ports, Degraded: "port 1 link flapped"}
		dok, dreason := d.Health()
		wantReason := c.reason
		if c.want {
			wantReason = "degraded: port 1 link flapped"
		}
		if dok || dreason != wantReason {
			t.Errorf("Health(%+v, degraded) = %v %q, want false %q", c.ports, dok, dreason, wantReason)
		}
		// A NIC the firmware policy refuses is unhealthy, its ports'
		// and counters' reasons first.
		r := NIC{PCI: "p", Ports: c.ports, Refused: "firmware 28.38.1900 below the minimum 28.39.1002 for 15b3:1021"}
		wantReason = c.reason
		if c.want {
			wantReason = r.Refused
		}
		if rok, rreason := r.Health(); rok || rreason != wantReason {
			t.Errorf("Health(%+v, refused) = %v %q, want false %q", c.ports, rok, rreason, wantReason)
		}
		r.Degraded = "port 1 link flapped"
		if _, rreason := r.Health(); c.want && rreason != "degraded: port 1 link flapped" {
			t.Errorf("Health(%+v, degraded and refused) reason %q, want the counters' first", c.ports, rreason)
		}
		ok, reason := n.Health()
		if ok != c.want || n.Healthy() != c.want || reason != c.reason {
			t.Errorf("Health(%+v) = %v %q, want %v %q", c.ports, ok, reason, c.want, c.reason)
		}
	}
}

// TestVFHealth: a VF is as healthy as its PF, then its own ports; a VF
// without ports of its own takes its PF's.
func TestVFHealth(t *testing.T) {
	up, down := NIC{PCI: "pf", Ports: []Port{activePort}}, NIC{PCI: "pf", Ports: []Port{downPort}}
	for _, c := range []struct {
		nic    NIC
		vf     VF
		want   bool
		reason string
	}{
		{up, VF{}, true, ""},
		{up, VF{Ports: []Port{activePort}}, true, ""},
		{up, VF{Ports: []Port{{Num: 1, State: "DOWN", PhysState: "LinkUp"}}}, false, "port 1 is DOWN/LinkUp"},
		{down, VF{Ports: []Port{activePort}}, false, "PF pf: port 1 is DOWN/Disabled"},
		{NIC{PCI: "pf"}, VF{}, false, "PF pf: no RDMA ports"},
		{NIC{PCI: "pf", Ports: []Port{activePort}, Degraded: "port 1 link flapped"}, VF{Ports: []Port{activePort}}, false, "PF pf: degraded: port 1 link flapped"},
		{NIC{PCI: "pf", Ports: []Port{activePort}, Refused: "firmware 1.2.3 below the minimum 1.2.4 for 15b3:1021"}, VF{Ports: []Port{activePort}}, false, "PF pf: firmware 1.2.3 below the minimum 1.2.4 for 15b3:1021"},
	} {
		ok, reason := c.nic.VFHealth(c.vf)
		if ok != c.want || reason != c.reason {
			t.Errorf("VFHealth(%+v, %+v) = %v %q, want %v %q", c.nic.Ports, c.vf.Ports, ok, reason, c.want, c.reason)
		}
	}
}

// Classes given by a finer source (an NCCL topology file) win over the
// tree's, pair by pair; pairs it does not give keep the tree's class.
func TestPairClassesOverrideTheTree(t *testing.T) {
	in := inv(t, "g0 - pciA 0 gpu", "n0 - pciB 0 nic", "n1 - pciC 0 nic", "n2 - pciD 1 nic")
	in.PairClasses = []PairClass{
		{GPU: "g0", NIC: "n1", Class: PIX, Source: "nccl-topo"},
		{GPU: "g0", NIC: "nope", Class: PIX, Source: "nccl-topo"},
		{GPU: "g0", NIC: "n2", Class: ClassUnknown, Source: "nccl-topo"},
	}
	topo := Build(in)
	var got []string
	for _, l := range topo.Links {
		got = append(got, l.NIC+"="+l.Class.String()+"/"+l.Source)
	}
	if want := "n0=NODE/ n1=PIX/nccl-topo n2=SYS/"; strings.Join(got, " ") != want {
		t.Errorf("links = %v, want %s", got, want)
	}
	if r, _ := topo.Rail("g0"); r.NIC != "n1" || r.Source != "nccl-topo" {
		t.Errorf("rail = %+v, want n1 from the NCCL topology", r)
	}
}
