package alloc

import (
	"errors"
	"fmt"
	"slices"
)

// ErrInvalidRequest is returned (wrapped) when a request cannot be answered
// within kubelet's contract: no topology, a negative size, a size larger
// than the offered devices, or must-include devices that are not offered or
// outnumber the size.
var ErrInvalidRequest = errors.New("alloc: invalid request")

// state is one decision in progress: the validated request mapped onto the
// index, and the answer built so far.
type state struct {
	ix   *Index
	size int
	gpus []int // indices of the pod's GPUs known to the model, deduplicated

	taken   []bool    // per index device: in the answer
	offered []bool    // per index device: offered and not must-include
	pfList  [][]int32 // per PF: offered devices, healthy first, then by address
	cursor  []int     // per PF: first position in pfList not known to be taken
	remain  []int     // per PF: offered devices not yet taken
	perPF   []int     // per PF: devices of the answer on it (must-include too)

	unknown     []string // offered IDs the model does not know, sorted
	unknownUsed int      // how many of unknown are in the answer (a prefix)

	out     []string
	reasons []string
	policy  string // the policy deciding (Result.Policy)
}

func prepare(ix *Index, req Request) (*state, error) {
	if req.Size < 0 {
		return nil, fmt.Errorf("%w: size %d is negative", ErrInvalidRequest, req.Size)
	}
	n := len(ix.devs)
	np := len(ix.pfs)
	s := &state{
		ix:      ix,
		size:    req.Size,
		taken:   make([]bool, n),
		offered: make([]bool, n),
		pfList:  make([][]int32, np),
		cursor:  make([]int, np),
		remain:  make([]int, np),
		perPF:   make([]int, np),
		out:     make([]string, 0, req.Size),
	}
	offeredCount := 0
	for _, a := range req.Available {
		if i, ok := ix.lookup(a); ok {
			if !s.offered[i] {
				s.offered[i] = true
				offeredCount++
			}
			continue
		}
		s.unknown = append(s.unknown, a)
	}
	if len(s.unknown) > 0 {
		slices.Sort(s.unknown)
		s.unknown = slices.Compact(s.unknown)
		offeredCount += len(s.unknown)
	}
	if req.Size > offeredCount {
		return nil, fmt.Errorf("%w: size %d but only %d distinct devices offered", ErrInvalidRequest, req.Size, offeredCount)
	}
	// Must-include devices go first, in the order kubelet gave them.
	var mustUnknown []string
	for _, a := range req.MustInclude {
		if i, ok := ix.lookup(a); ok {
			if s.taken[i] {
				continue
			}
			if !s.offered[i] {
				return nil, fmt.Errorf("%w: must-include device %q is not offered", ErrInvalidRequest, a)
			}
			s.taken[i] = true
			s.offered[i] = false
			s.perPF[ix.devs[i].pf]++
			s.out = append(s.out, a)
			continue
		}
		if _, found := slices.BinarySearch(s.unknown, a); !found {
			return nil, fmt.Errorf("%w: must-include device %q is not offered", ErrInvalidRequest, a)
		}
		if !slices.Contains(mustUnknown, a) {
			mustUnknown = append(mustUnknown, a)
			s.out = append(s.out, a)
		}
	}
	if len(s.out) > req.Size {
		return nil, fmt.Errorf("%w: %d must-include devices exceed size %d", ErrInvalidRequest, len(s.out), req.Size)
	}
	if len(mustUnknown) > 0 {
		s.unknown = slices.DeleteFunc(s.unknown, func(a string) bool { return slices.Contains(mustUnknown, a) })
	}
	backing := make([]int32, 0, offeredCount)
	for p := range ix.pfs {
		start := len(backing)
		for _, healthy := range [2]bool{true, false} {
			for _, d := range ix.pfs[p].devs {
				if s.offered[d] && ix.devs[d].healthy == healthy {
					backing = append(backing, d)
				}
			}
		}
		s.pfList[p] = backing[start:len(backing):len(backing)]
		s.remain[p] = len(s.pfList[p])
	}
	seen := make([]bool, len(ix.topo.GPUs))
	for _, g := range req.GPUs {
		if i, ok := ix.gpuIdx[g]; ok && !seen[i] {
			seen[i] = true
			s.gpus = append(s.gpus, i)
		}
	}
	if len(req.GPUs) > len(s.gpus) {
		s.note("%d of %d pod GPUs are unknown to the model or repeated; ignored", len(req.GPUs)-len(s.gpus), len(req.GPUs))
	}
	return s, nil
}

func (s *state) note(format string, args ...any) {
	s.reasons = append(s.reasons, fmt.Sprintf(format, args...))
}

// missing is how many devices the answer still lacks.
func (s *state) missing() int { return s.size - len(s.out) }

// next returns PF p's first offered device not yet taken, or -1.
func (s *state) next(p int) int32 {
	l := s.pfList[p]
	for s.cursor[p] < len(l) && s.taken[l[s.cursor[p]]] {
		s.cursor[p]++
	}
	if s.cursor[p] == len(l) {
		return -1
	}
	return l[s.cursor[p]]
}

// take adds offered device d to the answer.
func (s *state) take(d int32) {
	s.taken[d] = true
	p := s.ix.devs[d].pf
	s.perPF[p]++
	s.remain[p]--
	s.out = append(s.out, s.ix.devs[d].addr)
}

// takeUnknown adds the next offered device the model does not know.
func (s *state) takeUnknown() bool {
	if s.unknownUsed == len(s.unknown) {
		return false
	}
	s.out = append(s.out, s.unknown[s.unknownUsed])
	s.unknownUsed++
	return true
}

// pick returns the PF to take the next device from: among PFs with an
// offered device left, a healthy next device first, then the PF that
// better prefers over the current best, then the lowest address (PFs are
// in address order). -1 when nothing is left.
func (s *state) pick(better func(q, best int) bool) int {
	best := -1
	var bestHealthy bool
	for q := range s.pfList {
		d := s.next(q)
		if d < 0 {
			continue
		}
		h := s.ix.devs[d].healthy
		switch {
		case best < 0, h != bestHealthy && h:
			best, bestHealthy = q, h
		case h == bestHealthy && better(q, best):
			best = q
		}
	}
	return best
}

// spreadPick returns the PF spread takes from next: a healthy device first,
// then the PF with the fewest devices in this answer (one per rail before
// doubling up), then the one with the most offered devices left (balancing
// VF use across PFs), then the lowest address. -1 when nothing is left.
func (s *state) spreadPick() int {
	return s.pick(func(q, best int) bool {
		if s.perPF[q] != s.perPF[best] {
			return s.perPF[q] < s.perPF[best]
		}
		return s.remain[q] > s.remain[best]
	})
}

// fillSpread completes the answer the way spread does, then with devices
// the model does not know.
func (s *state) fillSpread() {
	if s.missing() <= 0 {
		return
	}
	before := len(s.out)
	for s.missing() > 0 {
		p := s.spreadPick()
		if p < 0 {
			break
		}
		s.take(s.next(p))
	}
	unknown := 0
	for s.missing() > 0 && s.takeUnknown() {
		unknown++
	}
	if n := len(s.out) - before - unknown; n > 0 {
		s.note("%d device(s) spread over rails", n)
	}
	if unknown > 0 {
		s.note("%d device(s) unknown to the topology model, taken last", unknown)
	}
}

func (s *state) result() (Result, error) {
	if len(s.out) != s.size {
		// prepare checked that enough devices are offered; reaching this is a bug.
		return Result{}, fmt.Errorf("alloc: internal error: answer has %d devices, want %d", len(s.out), s.size)
	}
	return Result{Devices: s.out, Reasons: s.reasons, Policy: s.policy}, nil
}

// rank is the effective rank of GPU g (index) with device d.
func (s *state) rank(g int, d int32) int { return s.ix.effRank(g, d) }
