package alloc

import (
	"hash/fnv"
	"math/rand/v2"
	"sync/atomic"
)

// Kubelet models a device plugin without GetPreferredAllocation: kubelet
// then takes the must-include devices and fills up with the free devices in
// its own order, sorted device IDs. (Kubelet's NUMA alignment under the
// Topology Manager narrows the offered devices before this step; the
// simulator models that part.)
type Kubelet struct{ cache indexCache }

var _ Policy = (*Kubelet)(nil)

// NewKubelet returns the kubelet baseline.
func NewKubelet() *Kubelet { return &Kubelet{} }

// Name returns "kubelet".
func (*Kubelet) Name() string { return "kubelet" }

// Needs implements Policy.
func (*Kubelet) Needs() Needs { return Needs{PodGPUs: false} }

// Allocate returns the must-include devices and then the lowest offered IDs.
func (p *Kubelet) Allocate(req Request) (Result, error) {
	s, err := begin(&p.cache, req, "kubelet")
	if err != nil {
		return Result{}, err
	}
	i := 0
	for s.missing() > 0 {
		for i < len(s.ix.devs) && !s.offered[i] {
			i++
		}
		switch {
		case i < len(s.ix.devs) && (s.unknownUsed == len(s.unknown) || s.ix.devs[i].addr < s.unknown[s.unknownUsed]):
			s.take(int32(i))
			i++
		case !s.takeUnknown():
			return s.result()
		}
	}
	s.note("kubelet order: lowest device IDs")
	return s.result()
}

// NUMA models an allocator that knows NUMA nodes and nothing finer: it
// returns any free devices on the NUMA nodes of the pod's GPUs (healthy
// ones first), drawn at random, and other devices only when those run out.
// The draws form a seeded sequence: the same seed and the same sequence of
// requests give the same answers. (Seeding by the request alone would give
// every identical request, such as an 8-GPU pod on an empty node, the same
// device, and make the baseline a matter of hash luck.)
type NUMA struct {
	seed  uint64
	calls atomic.Uint64
	cache indexCache
}

var _ Policy = (*NUMA)(nil)

// NewNUMA returns the NUMA-only baseline with the given seed.
func NewNUMA(seed uint64) *NUMA { return &NUMA{seed: seed} }

// Name returns "numa".
func (*NUMA) Name() string { return "numa" }

// Needs implements Policy.
func (*NUMA) Needs() Needs { return Needs{PodGPUs: true} }

// Allocate draws the devices on the GPUs' NUMA nodes.
func (p *NUMA) Allocate(req Request) (Result, error) {
	s, err := begin(&p.cache, req, "numa")
	if err != nil {
		return Result{}, err
	}
	h := fnv.New64a()
	for _, g := range req.GPUs {
		h.Write([]byte(g))
	}
	rng := rand.New(rand.NewPCG(p.seed^p.calls.Add(1), h.Sum64()^uint64(req.Size)<<32^uint64(len(req.Available))))

	numa := map[int]bool{}
	for _, g := range s.gpus {
		numa[s.ix.gpuNUMA[g]] = true
	}
	// Tiers: healthy aligned, unhealthy aligned, healthy other, unhealthy other.
	var tiers [4][]int32
	for d := range s.ix.devs {
		if !s.offered[d] {
			continue
		}
		dv := s.ix.devs[d]
		t := 0
		if len(numa) > 0 && !numa[s.ix.pfs[dv.pf].numa] {
			t = 2
		}
		if !dv.healthy {
			t++
		}
		tiers[t] = append(tiers[t], int32(d))
	}
	aligned := 0
	for t, tier := range tiers {
		for s.missing() > 0 && len(tier) > 0 {
			k := rng.IntN(len(tier))
			s.take(tier[k])
			tier[k] = tier[len(tier)-1]
			tier = tier[:len(tier)-1]
			if t < 2 {
				aligned++
			}
		}
	}
	if len(numa) > 0 {
		s.note("%d device(s) drawn on the GPUs' NUMA nodes", aligned)
	} else {
		s.note("GPUs unknown: %d device(s) drawn at random", aligned)
	}
	s.fillSpread() // only devices unknown to the model can be left
	return s.result()
}
