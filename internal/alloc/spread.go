package alloc

import "fmt"

// begin validates req and maps it onto the topology's cached index.
func begin(c *indexCache, req Request, policy string) (*state, error) {
	if req.Topology == nil {
		return nil, fmt.Errorf("%w: no topology", ErrInvalidRequest)
	}
	s, err := prepare(c.get(req.Topology), req)
	if err != nil {
		return nil, err
	}
	s.policy = policy
	return s, nil
}

// Spread gives one device per distinct PF (rail) before doubling up,
// preferring healthy devices and the PFs with the most free devices. A
// request as large as the number of rails gets one device on every rail,
// which lets NCCL pick the nearest NIC itself whatever GPUs the pod got.
type Spread struct{ cache indexCache }

var _ Policy = (*Spread)(nil)

// NewSpread returns the spread policy.
func NewSpread() *Spread { return &Spread{} }

// Name returns "spread".
func (*Spread) Name() string { return "spread" }

// Needs implements Policy.
func (*Spread) Needs() Needs { return Needs{PodGPUs: false} }

// Allocate chooses req.Size devices spread over rails.
func (p *Spread) Allocate(req Request) (Result, error) {
	s, err := begin(&p.cache, req, "spread")
	if err != nil {
		return Result{}, err
	}
	s.fillSpread()
	return s.result()
}

// Packed fills one PF's devices before the next (bin packing): it keeps
// whole PFs free for later pods at the price of ignoring distance.
type Packed struct{ cache indexCache }

var _ Policy = (*Packed)(nil)

// NewPacked returns the packed policy.
func NewPacked() *Packed { return &Packed{} }

// Name returns "packed".
func (*Packed) Name() string { return "packed" }

// Needs implements Policy.
func (*Packed) Needs() Needs { return Needs{PackShares: true} }

// Allocate chooses req.Size devices, filling PFs one after the other: the
// PF already used by this answer first, then the PF with the fewest offered
// devices left (best fit), then the lowest address; healthy devices before
// unhealthy ones.
func (p *Packed) Allocate(req Request) (Result, error) {
	s, err := begin(&p.cache, req, "packed")
	if err != nil {
		return Result{}, err
	}
	used := map[int]int{}
	for s.missing() > 0 {
		best := s.pick(func(q, best int) bool {
			if (s.perPF[q] > 0) != (s.perPF[best] > 0) {
				return s.perPF[q] > 0 // the PF already in use first
			}
			return s.remain[q] < s.remain[best] // then best fit
		})
		if best < 0 {
			break
		}
		s.take(s.next(best))
		used[best]++
	}
	for q := range s.ix.pfs {
		if used[q] > 0 {
			s.note("packed %d device(s) on PF %s", used[q], s.ix.pfs[q].addr)
		}
	}
	s.fillSpread() // only devices unknown to the model can be left
	return s.result()
}
