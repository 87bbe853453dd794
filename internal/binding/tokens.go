package binding

import (
	"cmp"
	"fmt"
	"slices"
)

// TokenState is one token a pool advertises to kubelet.
type TokenState struct {
	ID   string
	NUMA int // -1 unknown
	// Healthy and Reason: see Tokens.
	Healthy bool
	Reason  string
	// Device is the bound device ("" when unbound).
	Device string
}

// Tokens returns the tokens pool p advertises, sorted by NUMA node and
// index: per NUMA node, its bound tokens plus one unbound token per free
// device of that node (so one token per device, as long as tokens bind on
// their own node and bound devices stay), the unbound ones taking the
// indices of tokens kubelet holds (inUse) first and then the lowest free
// ones, so the IDs are the same after every restart and a token kubelet
// gave out is not renumbered away while its node has room.
//
// Health: a bound token is Unhealthy only when its own device is (and its
// Reason says so). Of the unbound tokens of a NUMA node, as many are
// Unhealthy as exceed the node's healthy free devices: a VF going DOWN
// makes one unbound token of its node Unhealthy. Tokens that inUse says
// kubelet already allocated (not yet bound) are marked last, and their
// Reason says so. So the healthy tokens are exactly as many as the healthy
// devices, whatever inUse says: kubelet's allocatable is that count, and
// the scheduler never gives the node more tokens' worth of pods than it.
//
// A held token its node has no slot left for (binds crossed NUMA nodes)
// is not listed (the plugin keeps it, Unhealthy, for its grace period) and
// binds a free device of another node. Its slot is not taken from another
// token: doing so hid a free device whenever inUse was out of date (a
// token kubelet had already released), kubelet then refused a pod the
// scheduler had placed by its allocatable ("requested number of devices
// unavailable ... which is unexpected", a failure for good), and the
// scheduler's count already keeps the pods on the node within the devices.
func Tokens(p *Pool, bindings []Binding, inUse map[string]bool) []TokenState {
	boundDev := map[string]string{} // device -> token
	boundTok := map[int][]Binding{} // NUMA -> bindings of this pool's tokens
	for _, b := range bindings {
		if b.Resource != p.Resource {
			continue
		}
		boundDev[b.Device] = b.Token
		id, err := ParseToken(b.Token)
		if err != nil {
			continue
		}
		boundTok[id.NUMA] = append(boundTok[id.NUMA], b)
	}
	free := map[int]int{}        // NUMA -> unbound devices
	healthyFree := map[int]int{} // NUMA -> healthy unbound devices
	for _, d := range p.Devices {
		if _, bound := boundDev[d.ID]; bound {
			continue
		}
		free[d.NUMA]++
		if d.Healthy {
			healthyFree[d.NUMA]++
		}
	}
	// Tokens kubelet holds and no binding has yet, per NUMA node: they keep
	// their IDs while their node has unbound slots (see below).
	heldUnbound := map[int][]int{}
	for id := range inUse {
		t, err := ParseToken(id)
		if err != nil || t.Tag != p.Tag || slices.ContainsFunc(boundTok[t.NUMA], func(b Binding) bool { return b.Token == id }) {
			continue
		}
		heldUnbound[t.NUMA] = append(heldUnbound[t.NUMA], t.K)
	}
	numas := map[int]bool{}
	for n := range free {
		numas[n] = true
	}
	for n := range boundTok {
		numas[n] = true
	}
	keys := make([]int, 0, len(numas))
	for n := range numas {
		keys = append(keys, n)
	}
	slices.Sort(keys)
	var out []TokenState
	for _, n := range keys {
		var mine []TokenState
		taken := map[int]bool{}
		for _, b := range boundTok[n] {
			id, _ := ParseToken(b.Token)
			taken[id.K] = true
			ts := TokenState{ID: b.Token, NUMA: n, Healthy: true, Device: b.Device}
			switch d, ok := p.Device(b.Device); {
			case !ok:
				ts.Healthy, ts.Reason = false, fmt.Sprintf("bound to %s, which disappeared", b.Device)
			case !d.Healthy:
				ts.Healthy, ts.Reason = false, fmt.Sprintf("bound to %s, which is unhealthy: %s", b.Device, d.Reason)
			}
			mine = append(mine, ts)
		}
		total := len(mine) + free[n]
		var unbound []int // indices of the unbound tokens in mine
		// Held tokens first: a bind across NUMA nodes moves a slot from one
		// node's count to the other's, and a token kubelet already gave
		// out must not be renumbered away while its node has room.
		held := slices.Sorted(slices.Values(heldUnbound[n]))
		for _, k := range slices.Compact(held) {
			if taken[k] {
				continue
			}
			if len(mine) == total {
				continue // no slot left: see Health above
			}
			taken[k] = true
			unbound = append(unbound, len(mine))
			mine = append(mine, TokenState{ID: Token(p.Tag, n, k), NUMA: n, Healthy: true})
		}
		for k := 0; len(mine) < total && k <= MaxTokenIndex; k++ {
			if taken[k] {
				continue
			}
			unbound = append(unbound, len(mine))
			mine = append(mine, TokenState{ID: Token(p.Tag, n, k), NUMA: n, Healthy: true})
		}
		sick := len(unbound) - healthyFree[n]
		// Highest indices first, tokens kubelet has not allocated first.
		order := slices.Clone(unbound)
		slices.Reverse(order)
		slices.SortStableFunc(order, func(a, b int) int {
			return cmp.Compare(boolInt(inUse[mine[a].ID]), boolInt(inUse[mine[b].ID]))
		})
		for _, i := range order {
			if sick <= 0 {
				break
			}
			mine[i].Healthy = false
			mine[i].Reason = fmt.Sprintf("NUMA node %d has %d healthy free devices for %d unbound tokens", n, healthyFree[n], len(unbound))
			if inUse[mine[i].ID] {
				mine[i].Reason += " (this token is allocated by kubelet and not bound yet)"
			}
			sick--
		}
		out = append(out, mine...)
	}
	slices.SortFunc(out, func(a, b TokenState) int {
		ia, _ := ParseToken(a.ID)
		ib, _ := ParseToken(b.ID)
		return cmp.Or(cmp.Compare(a.NUMA, b.NUMA), cmp.Compare(ia.K, ib.K))
	})
	return out
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
