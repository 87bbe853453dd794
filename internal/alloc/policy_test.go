package alloc

import (
	"errors"
	"slices"
	"testing"

	"github.com/railyard-io/railyard/internal/topology"
)

func vfs(t *topology.Topology) []string {
	var out []string
	for _, n := range t.NICs {
		for _, v := range n.VFs {
			out = append(out, v.PCI)
		}
	}
	return out
}

func pfsOf(t *testing.T, topo *topology.Topology, devs []string) []string {
	t.Helper()
	var out []string
	for _, d := range devs {
		n, ok := topo.NIC(d)
		if !ok {
			t.Fatalf("device %s not in model", d)
		}
		out = append(out, n.PCI)
	}
	return out
}

func mustAllocate(t *testing.T, p Policy, req Request) Result {
	t.Helper()
	res, err := p.Allocate(req)
	if err != nil {
		t.Fatalf("%s: %v", p.Name(), err)
	}
	checkContract(t, p.Name(), req, res)
	return res
}

func TestGPUAwareGivesEachGPUItsSwitchNIC(t *testing.T) {
	topo := dgx1Like(nicOpts{vfs: 4})
	for g := 0; g < 8; g++ {
		req := Request{Topology: topo, Available: vfs(topo), Size: 1, GPUs: []string{topo.GPUs[g].PCI}}
		for _, p := range []Policy{NewGPUAware(), NewOptimal()} {
			res := mustAllocate(t, p, req)
			if c := topo.Class(topo.GPUs[g].PCI, res.Devices[0]); c != topology.PIX {
				t.Errorf("%s: GPU%d got %s (%v), want a PIX device; reasons %v", p.Name(), g, res.Devices[0], c, res.Reasons)
			}
		}
	}
	// Four GPUs on two switches, one device per GPU: both NICs, two VFs each.
	gpus := []string{topo.GPUs[0].PCI, topo.GPUs[1].PCI, topo.GPUs[2].PCI, topo.GPUs[3].PCI}
	res := mustAllocate(t, NewGPUAware(), Request{Topology: topo, Available: vfs(topo), Size: 4, GPUs: gpus})
	got := pfsOf(t, topo, res.Devices)
	slices.Sort(got)
	want := []string{topo.NICs[0].PCI, topo.NICs[0].PCI, topo.NICs[1].PCI, topo.NICs[1].PCI}
	if !slices.Equal(got, want) {
		t.Errorf("gpu-aware PFs %v, want %v", got, want)
	}
}

func TestGPUAwareAvoidsDownPort(t *testing.T) {
	topo := dgx1Like(nicOpts{vfs: 2, downPF: map[int]bool{0: true}})
	req := Request{Topology: topo, Available: vfs(topo), Size: 1, GPUs: []string{topo.GPUs[0].PCI}}
	res := mustAllocate(t, NewGPUAware(), req)
	if n, _ := topo.NIC(res.Devices[0]); n.PCI != topo.NICs[1].PCI {
		t.Errorf("got %s on PF %s, want the healthy NODE NIC %s; reasons %v", res.Devices[0], n.PCI, topo.NICs[1].PCI, res.Reasons)
	}
	// A VF with its own port down is skipped in favour of its healthy sibling.
	topo = dgx1Like(nicOpts{vfs: 2, downVF: map[[2]int]bool{{0, 0}: true}})
	req = Request{Topology: topo, Available: vfs(topo), Size: 1, GPUs: []string{topo.GPUs[0].PCI}}
	res = mustAllocate(t, NewGPUAware(), req)
	if res.Devices[0] != topo.NICs[0].VFs[1].PCI {
		t.Errorf("got %s, want healthy VF %s", res.Devices[0], topo.NICs[0].VFs[1].PCI)
	}
}

func TestGPUAwareWithoutGPUsSpreads(t *testing.T) {
	topo := dgx1Like(nicOpts{vfs: 4})
	req := Request{Topology: topo, Available: vfs(topo), Size: 4}
	a := mustAllocate(t, NewGPUAware(), req)
	b := mustAllocate(t, NewSpread(), req)
	if !slices.Equal(a.Devices, b.Devices) {
		t.Errorf("gpu-aware without GPUs %v, spread %v", a.Devices, b.Devices)
	}
}

func TestSpreadOnePerRailThenDoubles(t *testing.T) {
	topo := dgx1Like(nicOpts{vfs: 4})
	res := mustAllocate(t, NewSpread(), Request{Topology: topo, Available: vfs(topo), Size: 6})
	count := map[string]int{}
	for _, p := range pfsOf(t, topo, res.Devices) {
		count[p]++
	}
	if len(count) != 4 {
		t.Fatalf("spread used %d PFs, want 4: %v", len(count), count)
	}
	for p, c := range count {
		if c > 2 {
			t.Errorf("PF %s got %d devices before others got 2", p, c)
		}
	}
	// Balancing: with NIC0 already half used, a one-device request avoids it.
	avail := slices.DeleteFunc(vfs(topo), func(d string) bool {
		return d == topo.NICs[0].VFs[0].PCI || d == topo.NICs[0].VFs[1].PCI
	})
	res = mustAllocate(t, NewSpread(), Request{Topology: topo, Available: avail, Size: 3})
	for _, p := range pfsOf(t, topo, res.Devices) {
		if p == topo.NICs[0].PCI {
			t.Errorf("spread took the busiest PF: %v", res.Devices)
		}
	}
}

func TestPackedFillsOnePF(t *testing.T) {
	topo := dgx1Like(nicOpts{vfs: 4})
	// NIC2 has only two VFs left: best fit starts there, then one more PF.
	avail := slices.DeleteFunc(vfs(topo), func(d string) bool {
		return d == topo.NICs[2].VFs[0].PCI || d == topo.NICs[2].VFs[1].PCI
	})
	res := mustAllocate(t, NewPacked(), Request{Topology: topo, Available: avail, Size: 5})
	pfs := pfsOf(t, topo, res.Devices)
	if pfs[0] != topo.NICs[2].PCI || pfs[1] != topo.NICs[2].PCI {
		t.Errorf("packed did not start with the fullest PF: %v", pfs)
	}
	for _, p := range pfs[2:] {
		if p != pfs[2] {
			t.Errorf("packed switched PFs before filling one: %v", pfs)
		}
	}
}

func TestKubeletTakesSortedIDs(t *testing.T) {
	topo := dgx1Like(nicOpts{vfs: 4})
	avail := vfs(topo)
	slices.Reverse(avail)
	res := mustAllocate(t, NewKubelet(), Request{Topology: topo, Available: avail, MustInclude: []string{avail[0]}, Size: 3})
	sorted := slices.Sorted(slices.Values(avail))
	want := []string{avail[0], sorted[0], sorted[1]}
	if !slices.Equal(res.Devices, want) {
		t.Errorf("kubelet %v, want %v", res.Devices, want)
	}
}

func TestNUMAStaysOnGPUsNode(t *testing.T) {
	topo := dgx1Like(nicOpts{vfs: 4})
	p := NewNUMA(1)
	for g := 0; g < 8; g++ {
		res := mustAllocate(t, p, Request{Topology: topo, Available: vfs(topo), Size: 6, GPUs: []string{topo.GPUs[g].PCI}})
		for _, d := range res.Devices {
			if n, _ := topo.NIC(d); n.NUMA != topo.GPUs[g].NUMA {
				t.Errorf("GPU%d (NUMA %d) got %s on NUMA %d", g, topo.GPUs[g].NUMA, d, n.NUMA)
			}
		}
	}
}

func TestOptimalSmallRequestPicksBestSharedNIC(t *testing.T) {
	// Two GPUs under switch 0, one device for the pod: NIC0 is PIX to both.
	topo := dgx1Like(nicOpts{vfs: 2})
	req := Request{Topology: topo, Available: vfs(topo), Size: 1, GPUs: []string{topo.GPUs[0].PCI, topo.GPUs[1].PCI, topo.GPUs[2].PCI}}
	for _, p := range []Policy{NewOptimal(), NewGPUAware()} {
		res := mustAllocate(t, p, req)
		if n, _ := topo.NIC(res.Devices[0]); n.PCI != topo.NICs[0].PCI {
			t.Errorf("%s chose %s, want a VF of %s", p.Name(), res.Devices[0], topo.NICs[0].PCI)
		}
	}
}

func TestMustIncludeCountsTowardGPUs(t *testing.T) {
	topo := dgx1Like(nicOpts{vfs: 2})
	// GPU0 is served by the must-include VF on its PIX NIC; the one free
	// place goes to GPU2's PIX NIC.
	req := Request{Topology: topo, Available: vfs(topo), MustInclude: []string{topo.NICs[0].VFs[1].PCI}, Size: 2,
		GPUs: []string{topo.GPUs[0].PCI, topo.GPUs[2].PCI}}
	for _, p := range []Policy{NewOptimal(), NewGPUAware()} {
		res := mustAllocate(t, p, req)
		if n, _ := topo.NIC(res.Devices[1]); n.PCI != topo.NICs[1].PCI {
			t.Errorf("%s: second device %s, want one on %s; reasons %v", p.Name(), res.Devices[1], topo.NICs[1].PCI, res.Reasons)
		}
	}
}

func TestInvalidRequests(t *testing.T) {
	topo := dgx1Like(nicOpts{vfs: 2})
	avail := vfs(topo)[:4]
	cases := map[string]Request{
		"no topology":       {Available: avail, Size: 1},
		"negative size":     {Topology: topo, Available: avail, Size: -1},
		"too large":         {Topology: topo, Available: avail, Size: 5},
		"must not offered":  {Topology: topo, Available: avail, MustInclude: []string{vfs(topo)[5]}, Size: 2},
		"unknown must":      {Topology: topo, Available: avail, MustInclude: []string{"0000:ff:00.0"}, Size: 2},
		"must exceeds size": {Topology: topo, Available: avail, MustInclude: avail[:3], Size: 2},
		"duplicates":        {Topology: topo, Available: []string{avail[0], avail[0]}, Size: 2},
	}
	for name, req := range cases {
		for _, p := range allPolicies(t) {
			if _, err := p.Allocate(req); !errors.Is(err, ErrInvalidRequest) {
				t.Errorf("%s: %s: err %v, want ErrInvalidRequest", name, p.Name(), err)
			}
		}
	}
	if _, err := ByName("nearest"); err == nil {
		t.Error("ByName accepted an unknown policy")
	}
}

func TestUnknownDevicesComeLast(t *testing.T) {
	topo := dgx1Like(nicOpts{vfs: 1})
	avail := append([]string{"0000:00:99.0"}, vfs(topo)...)
	for _, p := range allPolicies(t) {
		if p.Name() == "kubelet" {
			continue // kubelet's model takes sorted IDs, known or not
		}
		res := mustAllocate(t, p, Request{Topology: topo, Available: avail, Size: 4, GPUs: []string{topo.GPUs[0].PCI}})
		if slices.Contains(res.Devices, "0000:00:99.0") {
			t.Errorf("%s used the unknown device before known ones: %v", p.Name(), res.Devices)
		}
		res = mustAllocate(t, p, Request{Topology: topo, Available: avail, Size: 5, GPUs: []string{topo.GPUs[0].PCI}})
		if !slices.Contains(res.Devices, "0000:00:99.0") {
			t.Errorf("%s: %v lacks the unknown device", p.Name(), res.Devices)
		}
	}
}

// TestPortlessDevicesAreUnhealthy: the one health rule (topology.NIC.Health,
// also the pools'): a NIC whose ports could not be read is not healthy,
// nor are its VFs, and policies rank them after every healthy device.
func TestPortlessDevicesAreUnhealthy(t *testing.T) {
	topo := dgx1Like(nicOpts{vfs: 1, portless: true})
	ix := NewIndex(topo)
	if ix.Healthy(topo.NICs[0].VFs[0].PCI) || ix.Healthy(topo.NICs[0].PCI) {
		t.Error("devices without port information count as healthy")
	}
	if got := ix.EffectiveRank(topo.GPUs[0].PCI, topo.NICs[0].VFs[0].PCI); got != unhealthyRank {
		t.Errorf("rank %d, want the unhealthy rank %d", got, unhealthyRank)
	}
}

// TestNeedsAndDecidingPolicy: each policy declares whether it places by the
// pod's GPUs, and its result names the policy that decided, fallbacks
// included.
func TestNeedsAndDecidingPolicy(t *testing.T) {
	topo := dgx1Like(nicOpts{vfs: 2})
	avail := []string{}
	for _, n := range topo.NICs {
		for _, vf := range n.VFs {
			avail = append(avail, vf.PCI)
		}
	}
	gpus := []string{topo.GPUs[0].PCI}
	want := map[string]struct {
		needs             bool
		withGPUs, without string
	}{
		"kubelet":   {false, "kubelet", "kubelet"},
		"numa":      {true, "numa", "numa"},
		"spread":    {false, "spread", "spread"},
		"gpu-aware": {true, "gpu-aware", "spread"},
		"packed":    {false, "packed", "packed"},
		"optimal":   {true, "optimal", "spread"},
	}
	for _, p := range allPolicies(t) {
		w, ok := want[p.Name()]
		if !ok {
			t.Fatalf("no expectation for %s", p.Name())
		}
		if p.Needs().PodGPUs != w.needs {
			t.Errorf("%s: Needs().PodGPUs = %v", p.Name(), p.Needs().PodGPUs)
		}
		if got := mustAllocate(t, p, Request{Topology: topo, Available: avail, Size: 2, GPUs: gpus}).Policy; got != w.withGPUs {
			t.Errorf("%s with the pod's GPUs: decided by %q, want %q", p.Name(), got, w.withGPUs)
		}
		if got := mustAllocate(t, p, Request{Topology: topo, Available: avail, Size: 2}).Policy; got != w.without {
			t.Errorf("%s without them: decided by %q, want %q", p.Name(), got, w.without)
		}
	}
}
