package alloc

import (
	"fmt"
	"slices"

	"github.com/railyard-io/railyard/internal/assign"
)

// maxCombinations bounds the exact search of the optimal policy when the
// request is smaller than the pod's GPUs; beyond it the search would take
// more than a few milliseconds and optimal falls back to the greedy cover
// (and says so in its reasons).
const maxCombinations = 200_000

// Optimal is the reference policy: it minimises the pod's score (the sum
// over its GPUs of the effective rank of the nearest device given), exactly.
// When the request has room for one device per GPU it solves the assignment
// of GPUs to distinct devices with the Hungarian method (spreading GPUs that
// are equally close to several PFs); when it has not, it searches every set
// of PFs the request can cover. The rest of the request is filled by spread.
type Optimal struct{ cache indexCache }

var _ Policy = (*Optimal)(nil)

// NewOptimal returns the optimal policy.
func NewOptimal() *Optimal { return &Optimal{} }

// Name returns "optimal".
func (*Optimal) Name() string { return "optimal" }

// Needs implements Policy.
func (*Optimal) Needs() Needs { return Needs{PodGPUs: true} }

// Allocate chooses req.Size devices minimising the pod's score.
func (p *Optimal) Allocate(req Request) (Result, error) {
	s, err := begin(&p.cache, req, "optimal")
	if err != nil {
		return Result{}, err
	}
	switch {
	case len(s.gpus) == 0:
		s.note("pod GPUs unknown: spread over rails")
		s.policy = "spread"
	case s.missing() >= len(s.gpus):
		if err := s.assignGPUs(); err != nil {
			return Result{}, err
		}
	default:
		s.bestCover()
	}
	s.fillSpread()
	return s.result()
}

// assignGPUs gives every pod GPU a distinct device (a must-include one or an
// offered one) minimising the total effective rank. Every GPU's best PF ends
// up in the answer (if it had a free device unused by the assignment, moving
// the GPU there would lower the total), so the score is optimal too.
func (s *state) assignGPUs() error {
	type column struct {
		dev  int32 // -1: no device (padding)
		must bool
		slot int
	}
	np := len(s.ix.pfs)
	g := len(s.gpus)
	var cols []column
	mustPerPF := make([][]int32, np)
	for _, a := range s.out {
		if d, ok := s.ix.lookup(a); ok {
			mustPerPF[s.ix.devs[d].pf] = append(mustPerPF[s.ix.devs[d].pf], d)
		}
	}
	for q := 0; q < np; q++ {
		slot := 0
		for _, d := range mustPerPF[q] {
			cols = append(cols, column{dev: d, must: true, slot: slot})
			slot++
		}
		l := s.pfList[q]
		for k := 0; k < len(l) && k < g; k++ {
			cols = append(cols, column{dev: l[k], slot: slot})
			slot++
		}
	}
	for len(cols) < g {
		cols = append(cols, column{dev: -1})
	}
	const weight = 1 << 16
	cost := make([][]int64, g)
	for i, gi := range s.gpus {
		row := make([]int64, len(cols))
		for j, c := range cols {
			if c.dev < 0 {
				row[j] = (unhealthyRank + 1) * weight
				continue
			}
			row[j] = int64(s.rank(gi, c.dev))*weight + int64(c.slot)
		}
		cost[i] = row
	}
	rows, _, err := assign.Solve(cost)
	if err != nil {
		return fmt.Errorf("alloc: optimal assignment: %w", err)
	}
	for i, j := range rows {
		c := cols[j]
		gpu := s.ix.topo.GPUs[s.gpus[i]].PCI
		switch {
		case c.dev < 0:
			s.note("GPU %s: no device left", gpu)
		case c.must:
			s.note("GPU %s -> must-include %s (%s)", gpu, s.ix.devs[c.dev].addr, s.className(s.gpus[i], c.dev))
		default:
			s.take(c.dev)
			s.note("GPU %s -> %s on PF %s (%s)", gpu, s.ix.devs[c.dev].addr, s.ix.pfs[s.ix.devs[c.dev].pf].addr, s.className(s.gpus[i], c.dev))
		}
	}
	return nil
}

// bestCover chooses, when the request has fewer free places than the pod
// has GPUs, the set of PFs (one device each) minimising the score, by
// trying every set of the PFs that would bring some GPU closer.
func (s *state) bestCover() {
	cur := s.mustBest()
	n := s.missing()
	// Candidates: the PFs whose next device improves some GPU (a PF's other
	// devices are never better than its next one: healthy ones come first),
	// described by what they would give each GPU, min(rank, cur). PFs giving
	// the same are interchangeable (keep the one with most free devices), and
	// a PF that another PF matches or beats for every GPU is never needed: an
	// optimal set exists among the rest. This keeps the search small even on
	// machines with many equivalent NICs (AWS p5: 4 EFAs per GPU).
	var cands []int
	var ranks [][]int // ranks[c][i]: what candidate c gives GPU i
	for q := range s.pfList {
		d := s.next(q)
		if d < 0 {
			continue
		}
		v := make([]int, len(s.gpus))
		useful := false
		for i, g := range s.gpus {
			v[i] = min(s.rank(g, d), cur[i])
			useful = useful || v[i] < cur[i]
		}
		if useful {
			cands, ranks = append(cands, q), append(ranks, v)
		}
	}
	keep := make([]bool, len(cands))
	for c := range cands {
		keep[c] = true
		for o := range cands {
			if o == c || !dominates(ranks[o], ranks[c]) {
				continue
			}
			if !slices.Equal(ranks[o], ranks[c]) || s.remain[cands[o]] > s.remain[cands[c]] ||
				(s.remain[cands[o]] == s.remain[cands[c]] && o < c) {
				keep[c] = false
				break
			}
		}
	}
	k := 0
	for c := range cands {
		if keep[c] {
			cands[k], ranks[k] = cands[c], ranks[c]
			k++
		}
	}
	cands, ranks = cands[:k], ranks[:k]
	if len(cands) <= n {
		for _, q := range cands {
			d := s.next(q)
			s.take(d)
			s.note("PF %s: %s is the best device for some GPU", s.ix.pfs[q].addr, s.ix.devs[d].addr)
		}
		return
	}
	if binomial(len(cands), n) > maxCombinations {
		s.note("%d candidate PFs for %d device(s): too many sets to search, greedy cover (not exact)", len(cands), n)
		s.greedyCover(cur, n)
		return
	}
	best, bestScore, bestRemain := []int(nil), 0, 0
	pick := make([]int, 0, n)
	mins := make([][]int, n+1)
	mins[0] = cur
	for k := 1; k <= n; k++ {
		mins[k] = make([]int, len(cur))
	}
	var search func(from, depth, remain int)
	search = func(from, depth, remain int) {
		if depth == n {
			score := 0
			for _, v := range mins[n] {
				score += v
			}
			if best == nil || score < bestScore || (score == bestScore && remain > bestRemain) {
				best, bestScore, bestRemain = append(best[:0], pick...), score, remain
			}
			return
		}
		for c := from; c <= len(cands)-(n-depth); c++ {
			for i := range cur {
				mins[depth+1][i] = min(mins[depth][i], ranks[c][i])
			}
			pick = append(pick, c)
			search(c+1, depth+1, remain+s.remain[cands[c]])
			pick = pick[:depth]
		}
	}
	search(0, 0, 0)
	for _, c := range best {
		q := cands[c]
		d := s.next(q)
		s.take(d)
		s.note("PF %s: %s is in the best set of %d PF(s) (score %d)", s.ix.pfs[q].addr, s.ix.devs[d].addr, n, bestScore)
	}
}

// dominates reports whether a gives every GPU at most what b gives.
func dominates(a, b []int) bool {
	for i := range a {
		if a[i] > b[i] {
			return false
		}
	}
	return true
}

// binomial returns C(n, k), saturating at a large value.
func binomial(n, k int) int {
	if k < 0 || k > n {
		return 0
	}
	k = min(k, n-k)
	r := 1
	for i := 1; i <= k; i++ {
		r = r * (n - k + i) / i
		if r > 1<<40 {
			return 1 << 40
		}
	}
	return r
}
