package binding

import (
	"context"
	"strings"
	"testing"
)

func countTokens(ts []TokenState) (perNUMA, healthy map[int]int) {
	perNUMA, healthy = map[int]int{}, map[int]int{}
	for _, t := range ts {
		perNUMA[t.NUMA]++
		if t.Healthy {
			healthy[t.NUMA]++
		}
	}
	return perNUMA, healthy
}

// TestTokensTrackDevicesPerNUMA: one token per device of each NUMA node,
// advertised with that node, IDs the same on every call.
func TestTokensTrackDevicesPerNUMA(t *testing.T) {
	v, _ := testView(t, "dgx-h100", 2)
	p := &v.Pools[0]
	devs := map[int]int{}
	for _, d := range p.Devices {
		devs[d.NUMA]++
	}
	ts := Tokens(p, nil, nil)
	per, healthy := countTokens(ts)
	for n, c := range devs {
		if per[n] != c || healthy[n] != c {
			t.Errorf("NUMA %d: %d tokens (%d healthy), want %d", n, per[n], healthy[n], c)
		}
	}
	again := Tokens(p, nil, nil)
	for i := range ts {
		id, err := ParseToken(ts[i].ID)
		if err != nil || id.NUMA != ts[i].NUMA || ts[i].ID != again[i].ID {
			t.Errorf("token %d: %+v / %+v (%v)", i, ts[i], again[i], err)
		}
	}
}

// TestTokenHealthFollowsDevices: a free VF going DOWN makes one unbound
// token of its NUMA node Unhealthy (one kubelet has not allocated, the
// highest), never a bound one; a bound VF going DOWN makes its own token
// Unhealthy and says so; a vanished bound VF keeps its token listed.
func TestTokenHealthFollowsDevices(t *testing.T) {
	v, tp := testView(t, "dgx-h100", 2)
	s := newTestStore(t, v, Options{})
	g := tp.GPUs[0]
	tok := freeTokens(t, s, v, g.NUMA, 1, map[string]bool{})
	res, err := s.Bind(context.Background(), Request{Pod: PodRef{Namespace: "ns", Name: "a"}, Containers: []ContainerTokens{{Name: "c", Tokens: tok, GPUs: []string{g.PCI}}}})
	if err != nil {
		t.Fatal(err)
	}
	bs, _ := s.Bindings()
	p := &v.Pools[0]
	bound := res.Bindings[0].Device
	var freeSameNUMA int = -1
	for i, d := range p.Devices {
		if d.NUMA == g.NUMA && d.ID != bound && freeSameNUMA < 0 {
			freeSameNUMA = i
		}
	}
	all := Tokens(p, bs, nil)
	var highest string
	for _, ts := range all {
		if ts.NUMA == g.NUMA && ts.Device == "" {
			highest = ts.ID
		}
	}
	p.Devices[freeSameNUMA].Healthy, p.Devices[freeSameNUMA].Reason = false, "port 1 DOWN"
	ts := Tokens(p, bs, nil)
	var sick []TokenState
	for _, x := range ts {
		if !x.Healthy {
			sick = append(sick, x)
		}
	}
	if len(sick) != 1 || sick[0].ID != highest || sick[0].Device != "" {
		t.Fatalf("unhealthy %+v, want only the highest unbound token %s", sick, highest)
	}
	// kubelet holds that one (allocated, not bound yet): another goes.
	ts = Tokens(p, bs, map[string]bool{highest: true})
	sick = sick[:0]
	for _, x := range ts {
		if !x.Healthy {
			sick = append(sick, x)
		}
	}
	if len(sick) != 1 || sick[0].ID == highest || sick[0].Device != "" {
		t.Fatalf("unhealthy %+v, want an unbound token kubelet does not hold", sick)
	}
	// The bound VF goes down: its token says so; the count of unhealthy
	// unbound tokens stays what the free devices give.
	p.Devices[freeSameNUMA].Healthy = true
	for i := range p.Devices {
		if p.Devices[i].ID == bound {
			p.Devices[i].Healthy, p.Devices[i].Reason = false, "port 1 DOWN"
		}
	}
	ts = Tokens(p, bs, nil)
	sick = sick[:0]
	for _, x := range ts {
		if !x.Healthy {
			sick = append(sick, x)
		}
	}
	if len(sick) != 1 || sick[0].ID != tok[0] || !strings.Contains(sick[0].Reason, "bound to "+bound) {
		t.Fatalf("unhealthy %+v, want the bound token %s saying why", sick, tok[0])
	}
	// The bound VF vanishes: the token stays (its pod holds it), and the
	// node still has one token per remaining device besides.
	var kept []Device
	for _, d := range p.Devices {
		if d.ID != bound {
			kept = append(kept, d)
		}
	}
	p.Devices = kept
	ts = Tokens(p, bs, nil)
	per, _ := countTokens(ts)
	devs := 0
	for _, d := range p.Devices {
		if d.NUMA == g.NUMA {
			devs++
		}
	}
	if per[g.NUMA] != devs+1 {
		t.Errorf("NUMA %d: %d tokens, want %d devices + the vanished bound one", g.NUMA, per[g.NUMA], devs)
	}
	found := false
	for _, x := range ts {
		if x.ID == tok[0] {
			found = !x.Healthy && strings.Contains(x.Reason, "disappeared")
		}
	}
	if !found {
		t.Errorf("vanished bound token not listed as disappeared: %+v", ts)
	}
}
