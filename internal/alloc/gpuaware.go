package alloc

// GPUAware gives each of the pod's GPUs a device on its closest PF (by the
// distance classes, healthy devices first), spreading GPUs that are equally
// close to several PFs over them. When the request is too small for one
// device per GPU it chooses PFs greedily by how much they bring the GPUs
// closer. Without the pod's GPUs it falls back to spread.
type GPUAware struct{ cache indexCache }

var _ Policy = (*GPUAware)(nil)

// NewGPUAware returns the gpu-aware policy.
func NewGPUAware() *GPUAware { return &GPUAware{} }

// Name returns "gpu-aware".
func (*GPUAware) Name() string { return "gpu-aware" }

// Needs implements Policy.
func (*GPUAware) Needs() Needs { return Needs{PodGPUs: true} }

// Allocate chooses req.Size devices close to req.GPUs.
func (p *GPUAware) Allocate(req Request) (Result, error) {
	s, err := begin(&p.cache, req, "gpu-aware")
	if err != nil {
		return Result{}, err
	}
	if len(s.gpus) == 0 {
		s.note("pod GPUs unknown: spread over rails")
		s.policy = "spread"
		s.fillSpread()
		return s.result()
	}
	cur := s.mustBest()
	var needy []int
	for i, g := range s.gpus {
		if s.bestFree(g) < cur[i] {
			needy = append(needy, i)
		}
	}
	if len(needy) <= s.missing() {
		for _, i := range needy {
			g := s.gpus[i]
			q := s.closestPF(g)
			d := s.next(q)
			s.take(d)
			s.note("GPU %s -> %s on PF %s (%s)", s.ix.topo.GPUs[g].PCI, s.ix.devs[d].addr, s.ix.pfs[q].addr, s.className(g, d))
		}
		if n := len(s.gpus) - len(needy); n > 0 {
			s.note("%d GPU(s) already served by must-include devices", n)
		}
	} else {
		s.greedyCover(cur, s.missing())
	}
	s.fillSpread()
	return s.result()
}

// mustBest returns, per pod GPU, the best effective rank among the devices
// already in the answer (the must-include ones); unhealthyRank+1 when none.
func (s *state) mustBest() []int {
	cur := make([]int, len(s.gpus))
	for i := range cur {
		cur[i] = unhealthyRank + 1
	}
	for _, a := range s.out {
		d, known := s.ix.lookup(a)
		for i, g := range s.gpus {
			r := unknownRank
			if known {
				r = s.rank(g, d)
			}
			cur[i] = min(cur[i], r)
		}
	}
	return cur
}

// bestFree is the best effective rank GPU g can get from an offered device.
func (s *state) bestFree(g int) int {
	best := unhealthyRank + 1
	for q := range s.pfList {
		if d := s.next(q); d >= 0 {
			best = min(best, s.rank(g, d))
		}
	}
	return best
}

// closestPF returns the PF whose next offered device is best for GPU g:
// lowest effective rank, then fewest devices in the answer (balance), then
// most offered devices left, then lowest address. -1 when none is left.
func (s *state) closestPF(g int) int {
	best, bestRank := -1, 0
	for q := range s.pfList {
		d := s.next(q)
		if d < 0 {
			continue
		}
		r := s.rank(g, d)
		if best < 0 || r < bestRank ||
			(r == bestRank && (s.perPF[q] < s.perPF[best] ||
				(s.perPF[q] == s.perPF[best] && s.remain[q] > s.remain[best]))) {
			best, bestRank = q, r
		}
	}
	return best
}

// greedyCover adds up to n devices, each time from the PF that lowers the
// pod GPUs' total best rank the most (ties as closestPF); cur holds each
// GPU's best rank so far and is updated.
func (s *state) greedyCover(cur []int, n int) {
	for ; n > 0; n-- {
		best, bestGain := -1, 0
		for q := range s.pfList {
			d := s.next(q)
			if d < 0 {
				continue
			}
			gain := 0
			for i, g := range s.gpus {
				gain += max(0, cur[i]-s.rank(g, d))
			}
			if gain > bestGain || (gain == bestGain && gain > 0 &&
				(s.perPF[q] < s.perPF[best] || (s.perPF[q] == s.perPF[best] && s.remain[q] > s.remain[best]))) {
				best, bestGain = q, gain
			}
		}
		if best < 0 {
			return
		}
		d := s.next(best)
		s.take(d)
		for i, g := range s.gpus {
			cur[i] = min(cur[i], s.rank(g, d))
		}
		s.note("PF %s: %s brings the pod's GPUs %d rank(s) closer", s.ix.pfs[best].addr, s.ix.devs[d].addr, bestGain)
	}
}

func (s *state) className(g int, d int32) string {
	if !s.ix.devs[d].healthy {
		return s.ix.class[g*len(s.ix.pfs)+int(s.ix.devs[d].pf)].String() + ", unhealthy"
	}
	return s.ix.class[g*len(s.ix.pfs)+int(s.ix.devs[d].pf)].String()
}
