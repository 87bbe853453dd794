package binding

import (
	"context"
	"slices"
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

// TestHeldTokensSurviveCrossNUMABinds: a bind across NUMA nodes moves a
// slot from one node's count to the other's. A token kubelet already gave
// out (held, not bound) keeps its ID while its node has a slot; when its
// node has none, it is not listed and one unbound token kubelet does not
// hold goes Unhealthy instead, so the healthy tokens kubelet can still
// hand out never exceed the free devices.
func TestHeldTokensSurviveCrossNUMABinds(t *testing.T) {
	v, _ := testView(t, "roce-8gpu-4nic", 2)
	p := &v.Pools[0]
	byNUMA := map[int][]string{}
	for _, d := range p.Devices {
		byNUMA[d.NUMA] = append(byNUMA[d.NUMA], d.ID)
	}
	if len(byNUMA[0]) != 4 || len(byNUMA[1]) != 4 {
		t.Fatalf("devices per NUMA node %v, want 4 and 4", byNUMA)
	}
	tag := p.Tag
	bind := func(tok, dev string) Binding { return Binding{Resource: p.Resource, Token: tok, Device: dev} }
	listed := func(ts []TokenState) map[string]TokenState {
		m := map[string]TokenState{}
		for _, x := range ts {
			m[x.ID] = x
		}
		return m
	}

	// n1-0 on a node-0 device, n1-1 on a node-1 device: node 1 has 3 free
	// devices, so 3 unbound slots; kubelet holds n1-5 (listed before a
	// renumbering). It keeps its ID; the other slots take n1-2 and n1-3.
	bs := []Binding{bind(Token(tag, 1, 0), byNUMA[0][0]), bind(Token(tag, 1, 1), byNUMA[1][0])}
	held := map[string]bool{Token(tag, 1, 5): true}
	got := listed(Tokens(p, bs, held))
	for _, k := range []int{2, 3, 5} {
		if x, ok := got[Token(tag, 1, k)]; !ok || !x.Healthy {
			t.Errorf("n1-%d not listed healthy: %+v", k, got)
		}
	}
	if _, ok := got[Token(tag, 1, 4)]; ok {
		t.Errorf("n1-4 listed beside held n1-5: node 1 has 3 slots: %+v", got)
	}

	// n1-2 and n0-1 take two more node-1 devices: node 1 has 1 slot for 2
	// held tokens (n1-3, n1-4). n1-3 keeps it; n1-4 is not listed, and
	// one unbound node-0 token kubelet does not hold is reserved for it.
	bs = append(bs, bind(Token(tag, 1, 2), byNUMA[1][1]), bind(Token(tag, 0, 1), byNUMA[1][2]))
	held = map[string]bool{Token(tag, 1, 3): true, Token(tag, 1, 4): true}
	ts := Tokens(p, bs, held)
	got = listed(ts)
	if _, ok := got[Token(tag, 1, 3)]; !ok {
		t.Errorf("held n1-3 lost its node's one slot: %+v", got)
	}
	if _, ok := got[Token(tag, 1, 4)]; ok {
		t.Errorf("n1-4 listed although node 1 has no slot for it: %+v", got)
	}
	reserved := 0
	for _, x := range ts {
		if !x.Healthy && strings.Contains(x.Reason, "reserved for "+Token(tag, 1, 4)) {
			reserved++
			if x.NUMA != 0 || held[x.ID] || x.Device != "" {
				t.Errorf("reserved token %+v: want an unbound node-0 token kubelet does not hold", x)
			}
		}
	}
	free := 0
	for _, d := range p.Devices {
		if !slices.ContainsFunc(bs, func(b Binding) bool { return b.Device == d.ID }) {
			free++
		}
	}
	// Kubelet can still hand out the healthy unbound tokens it does not
	// hold; with the ones it holds they must be exactly the free devices.
	avail := 0
	for _, x := range ts {
		if x.Device == "" && x.Healthy && !held[x.ID] {
			avail++
		}
	}
	if reserved != 1 || avail+len(held) != free {
		t.Errorf("reserved %d tokens; %d allocatable + %d held for %d free devices: %+v", reserved, avail, len(held), free, ts)
	}
}
