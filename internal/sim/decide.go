package sim

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"slices"
	"time"

	"github.com/railyard-io/railyard/internal/alloc"
)

// errPolicy is a policy's refusal: the pod is rejected, the run goes on.
var errPolicy = errors.New("policy error")

// podSpec is what a policy's decision needs of a pod: its devices, and
// whether kubelet allocated its GPUs before them (the coin toss of its
// map order).
type podSpec struct {
	devices   int32
	gpusKnown bool
}

// decide chooses the devices of a pod placed on node with GPUs gpus, as
// the runner's policy would at its binding time; mask is the Topology
// Manager's NUMA hint when tmOn.
func (r *runner) decide(node int, pod *podSpec, gpus, mask uint64, tmOn bool) ([]int32, error) {
	if r.cfg.Devices == AllPFs {
		return r.onEveryPF(node)
	}
	size := int(pod.devices)
	switch r.p.Binding {
	case AtSandbox:
		r.offer(node, mask, tmOn, size)
		return r.bindTokens(node, pod, gpus)
	case InClaim:
		clear(r.offerMust)
		return r.ask.ask(r.c.free(node), r.offerMust, size, gpus)
	default:
		r.offer(node, mask, tmOn, size)
		told := gpus
		if !pod.gpusKnown {
			told = 0 // kubelet allocated the NIC resource before the GPUs
		}
		return r.ask.ask(r.offerAvail, r.offerMust, size, told)
	}
}

// offer models kubelet's device manager (1.35) for the NIC resource: with
// the Topology Manager on, when more NUMA-aligned free devices exist than
// the pod needs, only those are offered to GetPreferredAllocation;
// otherwise every aligned device is taken (must-include) and the rest is
// asked for among all free devices. It fills r.offerAvail and r.offerMust.
func (r *runner) offer(node int, mask uint64, tmOn bool, size int) {
	free := r.c.free(node)
	copy(r.offerAvail, free)
	clear(r.offerMust)
	if !tmOn {
		return
	}
	for w := range r.offerMust {
		var numa uint64
		for k := mask; k != 0; k &= k - 1 {
			numa |= r.m.numaSet[bits.TrailingZeros64(k)][w]
		}
		r.offerMust[w] = free[w] & numa
	}
	if size < count(r.offerMust) {
		copy(r.offerAvail, r.offerMust)
		clear(r.offerMust)
	}
}

// bindTokens models late binding (internal/binding) after kubelet's
// offer. Tokens of one NUMA node are fungible, so kubelet's choice is how
// many tokens of each node the pod gets: every must-include one, then the
// device plugin's preference among the offered (the NUMA nodes of the
// pod's GPUs first when kubelet allocated the GPUs first, then by NUMA
// node). At sandbox creation the GPUs are known and each NUMA node's tokens
// bind there, near the pod's GPUs of that node (on any free device when
// that node is short); tokens of a node holding none of the pod's GPUs bind
// last, on any free device, near all of them.
func (r *runner) bindTokens(node int, pod *podSpec, gpus uint64) ([]int32, error) {
	m, c := r.m, r.c
	need := int(pod.devices) - count(r.offerMust)
	clear(r.tokens)
	for w, word := range r.offerMust {
		for ; word != 0; word &= word - 1 {
			r.tokens[m.devNUMA[w*64+bits.TrailingZeros64(word)]]++
		}
	}
	for k := range r.tokens {
		n := 0
		for w := range r.offerAvail {
			n += bits.OnesCount64(r.offerAvail[w] &^ r.offerMust[w] & m.numaSet[k][w])
		}
		r.poolCount[k] = n
	}
	if r.p.lowestNUMATokens {
		r.lowestNUMATokens(need, pod.gpusKnown, gpus)
	} else {
		r.balanceTokens(need, pod.gpusKnown, gpus)
	}

	free := c.free(node)
	clear(r.chosenSet)
	r.chosen = r.chosen[:0]
	elsewhere := 0
	bind := func(n int, k int, serve uint64) error {
		for w := range r.cand {
			r.cand[w] = free[w] &^ r.chosenSet[w]
			if k >= 0 {
				r.cand[w] &= m.numaSet[k][w]
			}
		}
		if k >= 0 && count(r.cand) < n { // the node is short: any free device
			for w := range r.cand {
				r.cand[w] = free[w] &^ r.chosenSet[w]
			}
		}
		for w := range r.cand {
			r.cand[w] |= r.chosenSet[w]
		}
		ans, err := r.ask.ask(r.cand, r.chosenSet, len(r.chosen)+n, serve)
		if err != nil {
			return err
		}
		for _, d := range ans {
			if !has(r.chosenSet, d) {
				r.chosenSet[d/64] |= 1 << (d % 64)
				r.chosen = append(r.chosen, d)
			}
		}
		return nil
	}
	for k, n := range r.tokens {
		if n == 0 {
			continue
		}
		if on := gpus & c.numaGPUs[k]; on != 0 && m.numaID[k] >= 0 {
			if err := bind(n, k, on); err != nil {
				return nil, err
			}
			continue
		}
		elsewhere += n
	}
	if elsewhere > 0 {
		if err := bind(elsewhere, -1, gpus); err != nil {
			return nil, err
		}
	}
	return r.chosen, nil
}

// lowestNUMATokens adds need tokens as the device plugin's first build
// preferred them: those of the NUMA nodes of the pod's GPUs first when the
// GPUs are known, then by NUMA node, lowest first (late-bound-lowest-numa).
func (r *runner) lowestNUMATokens(need int, known bool, gpus uint64) {
	for _, wantNear := range [2]bool{true, false} {
		for k := range r.tokens {
			near := known && gpus&r.c.numaGPUs[k] != 0
			if near == wantNear {
				t := min(need, r.poolCount[k])
				r.tokens[k] += t
				r.poolCount[k] -= t
				need -= t
			}
		}
	}
}

// balanceTokens adds need tokens balanced over NUMA nodes, one at a time
// to the node furthest below its share: with the GPUs known, a node's
// share is its number of the pod's GPUs; without, every offered node's is
// the same. This is how Railyard's device plugin prefers tokens
// (deviceplugin.spreadTokens): policy late-bound.
func (r *runner) balanceTokens(need int, known bool, gpus uint64) {
	for ; need > 0; need-- {
		best, bestGap := -1, 0
		for k, left := range r.poolCount {
			if left == 0 {
				continue
			}
			share := 1
			if known {
				share = bits.OnesCount64(gpus & r.c.numaGPUs[k])
			}
			if gap := share - r.tokens[k]; best < 0 || gap > bestGap {
				best, bestGap = k, gap
			}
		}
		r.tokens[best]++
		r.poolCount[best]--
	}
}

// asker asks a policy for devices and checks its answer against kubelet's
// contract; it sums the decision time of a pod.
//
// A pure policy's answers are remembered by request (the offered and
// must-include devices, the size and the GPUs told): node states repeat
// so much that a replay asks the same few thousand questions a million
// times, and a remembered answer costs a map lookup instead of a decision.
// Sampled pods (timed) are asked anyway, which times decisions without
// bias and checks that a remembered answer is what the policy says again.
type asker struct {
	m       *machine
	p       alloc.Policy
	elapsed time.Duration
	timed   bool // ask even a remembered request, and time it
	calls   int  // Allocate calls

	memo map[string]answer // nil: ask every time
	key  []byte

	avail, must, gpus []string
	answer            []int32
	seen              []uint64
}

// answer is a remembered answer: devices, or a refusal.
type answer struct {
	devs    []int32
	refused bool
}

// maxMemo bounds the answers remembered per policy (a few MB).
const maxMemo = 1 << 16

func newAsker(m *machine, p Policy, memo bool) asker {
	a := asker{m: m, p: p.Alloc, seen: make([]uint64, m.words)}
	if memo && p.Pure {
		a.memo = map[string]answer{}
	}
	return a
}

// ask offers the devices of avail, must-include those of must, asks for
// size devices and tells the policy the GPUs of gpus. It returns the
// answer as devices, errPolicy when the policy refused, or an error
// when the answer breaks the contract or a pure policy changed its mind
// (bugs the simulation stops on).
func (a *asker) ask(avail, must []uint64, size int, gpus uint64) ([]int32, error) {
	var known answer
	var remembered bool
	if a.memo != nil {
		a.key = a.key[:0]
		for _, set := range [2][]uint64{avail, must} {
			for _, w := range set {
				a.key = binary.LittleEndian.AppendUint64(a.key, w)
			}
		}
		a.key = binary.LittleEndian.AppendUint64(a.key, gpus)
		a.key = binary.LittleEndian.AppendUint32(a.key, uint32(size))
		if known, remembered = a.memo[string(a.key)]; remembered && !a.timed {
			if known.refused {
				return nil, errPolicy
			}
			a.answer = append(a.answer[:0], known.devs...)
			return a.answer, nil
		}
	}
	devs, err := a.decide(avail, must, size, gpus)
	if a.memo == nil || (err != nil && err != errPolicy) {
		return devs, err
	}
	got := answer{devs: devs, refused: err == errPolicy}
	switch {
	case remembered && (got.refused != known.refused || !slices.Equal(got.devs, known.devs)):
		return nil, fmt.Errorf("policy %s answered the same request with %v (refused %v), earlier with %v (refused %v): not pure",
			a.p.Name(), got.devs, got.refused, known.devs, known.refused)
	case !remembered && len(a.memo) < maxMemo:
		got.devs = slices.Clone(got.devs)
		a.memo[string(a.key)] = got
	}
	return devs, err
}

// decide asks the policy itself.
func (a *asker) decide(avail, must []uint64, size int, gpus uint64) ([]int32, error) {
	a.avail, a.must, a.gpus = a.names(a.avail, avail), a.names(a.must, must), a.gpus[:0]
	for g := gpus; g != 0; g &= g - 1 {
		a.gpus = append(a.gpus, a.m.gpus[bits.TrailingZeros64(g)])
	}
	req := alloc.Request{Topology: a.m.topo, Available: a.avail, MustInclude: a.must, Size: size, GPUs: a.gpus}
	a.calls++
	t0 := time.Now()
	out, err := a.p.Allocate(req)
	a.elapsed += time.Since(t0)
	if err != nil {
		return nil, errPolicy
	}
	if len(out.Devices) != size {
		return nil, fmt.Errorf("answered %d devices for a request of %d", len(out.Devices), size)
	}
	clear(a.seen)
	a.answer = a.answer[:0]
	inMust := 0
	for _, addr := range out.Devices {
		d := a.m.device(addr)
		if d < 0 || !has(avail, d) || has(a.seen, d) {
			return nil, fmt.Errorf("answered device %q that is unknown, not offered or repeated", addr)
		}
		a.seen[d/64] |= 1 << (d % 64)
		if has(must, d) {
			inMust++
		}
		a.answer = append(a.answer, d)
	}
	if inMust != len(a.must) {
		return nil, fmt.Errorf("answer %v lacks must-include devices %v", out.Devices, a.must)
	}
	return a.answer, nil
}

// names lists the addresses of the devices in set, in address order.
func (a *asker) names(dst []string, set []uint64) []string {
	dst = dst[:0]
	for w, word := range set {
		for ; word != 0; word &= word - 1 {
			dst = append(dst, a.m.devs[w*64+bits.TrailingZeros64(word)])
		}
	}
	return dst
}
