package binding

import (
	"context"
	"math/rand/v2"
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
// node has none, it is not listed, and no other token is hidden for it:
// every healthy free device stays advertised.
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
	// held tokens (n1-3, n1-4). n1-3 keeps it; n1-4 is not listed (it
	// binds a free node-0 device), and every token is healthy.
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
	for _, x := range ts {
		if !x.Healthy {
			t.Errorf("token %+v unhealthy: every device is healthy", x)
		}
	}
	if len(ts) != len(p.Devices) {
		t.Errorf("%d tokens for %d devices", len(ts), len(p.Devices))
	}
}

// TestHealthyTokensAlwaysMatchHealthyDevices: whatever the bindings and
// whatever the agent believes kubelet holds (inUse may be out of date: a
// token kubelet released, a token of a pod whose admission failed), the
// pool lists one token per device and exactly as many healthy tokens as
// healthy devices. Kubelet's allocatable is that count and the scheduler
// places pods by it; a token hidden for a held token (the rule this
// replaced) made kubelet refuse a pod the scheduler had placed, for good
// (the e2e's "requested number of devices unavailable ... which is
// unexpected", seen under load).
func TestHealthyTokensAlwaysMatchHealthyDevices(t *testing.T) {
	t.Parallel()
	v, _ := testView(t, "roce-8gpu-4nic", 2)
	base := v.Pools[0]
	rng := rand.New(rand.NewPCG(7, 21))
	for i := range 20000 {
		p := base
		p.Devices = slices.Clone(base.Devices)
		healthy := 0
		for j := range p.Devices {
			p.Devices[j].Healthy = rng.IntN(6) != 0
			if p.Devices[j].Healthy {
				healthy++
			}
		}
		// Bind a random set of devices, each to a token of a random NUMA
		// node and index (binds cross NUMA nodes).
		var bs []Binding
		used := map[string]bool{}
		for _, d := range p.Devices {
			if rng.IntN(2) == 0 {
				continue
			}
			for {
				tok := Token(p.Tag, rng.IntN(2), rng.IntN(8))
				if !used[tok] {
					used[tok] = true
					bs = append(bs, Binding{Resource: p.Resource, Token: tok, Device: d.ID})
					break
				}
			}
		}
		inUse := map[string]bool{}
		for range rng.IntN(10) {
			inUse[Token(p.Tag, rng.IntN(2), rng.IntN(8))] = true
		}
		ts := Tokens(&p, bs, inUse)
		got := 0
		ids := map[string]bool{}
		for _, x := range ts {
			if x.Healthy {
				got++
			}
			if ids[x.ID] {
				t.Fatalf("case %d: token %s listed twice: %+v", i, x.ID, ts)
			}
			ids[x.ID] = true
		}
		if len(ts) != len(p.Devices) || got != healthy {
			t.Fatalf("case %d: %d tokens (%d healthy) for %d devices (%d healthy)\nbindings %+v\ninUse %v\ntokens %+v",
				i, len(ts), got, len(p.Devices), healthy, bs, inUse, ts)
		}
	}
}
