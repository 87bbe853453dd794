package alloc

import (
	"errors"
	"math/rand/v2"
	"slices"
	"testing"
)

func allPolicies(t testing.TB) []Policy {
	t.Helper()
	var ps []Policy
	for _, n := range Names() {
		p, err := ByName(n)
		if err != nil {
			t.Fatal(err)
		}
		if p.Name() != n {
			t.Fatalf("ByName(%q).Name() = %q", n, p.Name())
		}
		ps = append(ps, p)
	}
	return ps
}

// randomRequest draws a request over ix's devices. It sometimes breaks the
// contract (size too large, must-include not offered) and says whether it
// did.
func randomRequest(r *rand.Rand, ix *Index) (req Request, valid bool) {
	all := ix.Devices()
	var avail []string
	keep := r.Float64()
	for _, d := range all {
		if r.Float64() < keep {
			avail = append(avail, d)
		}
	}
	r.Shuffle(len(avail), func(i, j int) { avail[i], avail[j] = avail[j], avail[i] })
	var must []string
	if len(avail) > 0 && r.IntN(3) == 0 {
		must = append(must, avail[:r.IntN(min(len(avail), 4)+1)]...)
	}
	valid = true
	if r.IntN(15) == 0 && len(avail) < len(all) {
		// a must-include device that is not offered
		for _, d := range all {
			if !slices.Contains(avail, d) {
				must = append(must, d)
				break
			}
		}
		valid = false
	}
	size := len(must) + r.IntN(len(avail)-len(must)+1+max(0, len(must)-len(avail)))
	if r.IntN(15) == 0 {
		size = len(avail) + 1 + r.IntN(3)
		valid = false
	}
	if r.IntN(20) == 0 && len(must) > 0 {
		size = len(must) - 1
		valid = false
	}
	var gpus []string
	if r.IntN(5) > 0 {
		for _, g := range ix.Topology().GPUs {
			if r.IntN(2) == 0 {
				gpus = append(gpus, g.PCI)
			}
		}
	}
	return Request{Topology: ix.Topology(), Available: avail, MustInclude: must, Size: size, GPUs: gpus}, valid
}

// TestPropertyContract draws thousands of random requests over random
// hand-built machines and checks every policy against kubelet's contract:
// exactly Size distinct devices, all offered, all must-include devices
// included, an ErrInvalidRequest when the request is impossible; and that
// no policy ever beats optimal's score.
func TestPropertyContract(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	policies := allPolicies(t)
	iters := 6000
	if testing.Short() {
		iters = 600
	}
	var checked, exactCmp int
	for it := 0; it < iters; it++ {
		topo := randomTopology(r)
		ix := NewIndex(topo)
		for k := 0; k < 5; k++ {
			req, valid := randomRequest(r, ix)
			scores := map[string]int{}
			for _, p := range policies {
				res, err := p.Allocate(req)
				if !valid {
					if !errors.Is(err, ErrInvalidRequest) {
						t.Fatalf("%s: invalid request %+v: got err %v, want ErrInvalidRequest", p.Name(), req, err)
					}
					continue
				}
				if err != nil {
					t.Fatalf("%s: valid request %+v: %v", p.Name(), req, err)
				}
				checkContract(t, p.Name(), req, res)
				scores[p.Name()] = ix.Score(req.GPUs, res.Devices)
				checked++
			}
			if !valid || len(req.GPUs) == 0 {
				continue
			}
			exactCmp++
			for name, sc := range scores {
				if sc < scores["optimal"] {
					t.Fatalf("%s scored %d, better than optimal's %d on %+v", name, sc, scores["optimal"], req)
				}
			}
		}
	}
	t.Logf("%d answers checked, %d requests with GPUs compared against optimal", checked, exactCmp)
}

func checkContract(t *testing.T, name string, req Request, res Result) {
	t.Helper()
	if len(res.Devices) != req.Size {
		t.Fatalf("%s: %d devices, want %d (req %+v)", name, len(res.Devices), req.Size, req)
	}
	seen := map[string]bool{}
	for _, d := range res.Devices {
		if seen[d] {
			t.Fatalf("%s: device %s returned twice", name, d)
		}
		seen[d] = true
		if !slices.Contains(req.Available, d) {
			t.Fatalf("%s: device %s was not offered", name, d)
		}
	}
	for _, m := range req.MustInclude {
		if !seen[m] {
			t.Fatalf("%s: must-include %s missing from %v", name, m, res.Devices)
		}
	}
}

// TestPropertyDeterministic checks that equal requests get equal answers
// (for numa: two policies with the same seed, asked the same sequence).
func TestPropertyDeterministic(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 5))
	policies, twins := allPolicies(t), allPolicies(t)
	for it := 0; it < 300; it++ {
		ix := NewIndex(randomTopology(r))
		req, valid := randomRequest(r, ix)
		if !valid {
			continue
		}
		for i, p := range policies {
			a, err1 := p.Allocate(req)
			b, err2 := twins[i].Allocate(req)
			if err1 != nil || err2 != nil {
				t.Fatalf("%s: %v / %v", p.Name(), err1, err2)
			}
			if !slices.Equal(a.Devices, b.Devices) {
				t.Fatalf("%s: %v then %v", p.Name(), a.Devices, b.Devices)
			}
		}
	}
}

// TestOptimalMatchesBruteForce compares optimal's score with an exhaustive
// search over every subset of the offered devices on small requests.
func TestOptimalMatchesBruteForce(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 17))
	opt := NewOptimal()
	compared := 0
	for it := 0; it < 3000 && compared < 800; it++ {
		ix := NewIndex(randomTopology(r))
		req, valid := randomRequest(r, ix)
		if !valid || len(req.GPUs) == 0 || len(req.Available) > 14 {
			continue
		}
		res, err := opt.Allocate(req)
		if err != nil {
			t.Fatal(err)
		}
		want := bruteBest(ix, req)
		if got := ix.Score(req.GPUs, res.Devices); got != want {
			t.Fatalf("optimal scored %d, brute force %d on %+v (answer %v)", got, want, req, res.Devices)
		}
		compared++
	}
	if compared < 100 {
		t.Fatalf("only %d requests compared", compared)
	}
}

// bruteBest is the minimal score over every Size-subset of Available that
// contains MustInclude.
func bruteBest(ix *Index, req Request) int {
	var free []string
	for _, d := range req.Available {
		if !slices.Contains(req.MustInclude, d) {
			free = append(free, d)
		}
	}
	best := -1
	pick := slices.Clone(req.MustInclude)
	var rec func(from int)
	rec = func(from int) {
		if len(pick) == req.Size {
			if s := ix.Score(req.GPUs, pick); best < 0 || s < best {
				best = s
			}
			return
		}
		for i := from; i <= len(free)-(req.Size-len(pick)); i++ {
			pick = append(pick, free[i])
			rec(i + 1)
			pick = pick[:len(pick)-1]
		}
	}
	rec(0)
	return best
}
