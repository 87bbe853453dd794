package jobrails

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"
)

// ErrNoRoom is wrapped by Choose's error when no rail set has room for
// every pod of the job.
var ErrNoRoom = errors.New("no rail set has room for every pod of the job")

// ErrInput is wrapped by the errors of bad arguments.
var ErrInput = errors.New("invalid job")

// RailGPUs is one rail of a rail set and how many GPUs a pod takes on it
// (every GPU of the rail: a rail is not split between pods), with the
// GPUs' PCI addresses on the nodes that have the rail (the template pins
// each GPU request to them).
type RailGPUs struct {
	Rail   int64
	GPUs   int
	BusIDs []string
}

// Set is a rail set, by rail.
type Set []RailGPUs

// String is "4,6".
func (s Set) String() string {
	rails := make([]int64, len(s))
	for i, r := range s {
		rails[i] = r.Rail
	}
	return joinRails(rails)
}

// GPUs is the pod's GPU count on s.
func (s Set) GPUs() int {
	n := 0
	for _, r := range s {
		n += r.GPUs
	}
	return n
}

// maxRails bounds the subsets Choose tries on one node (2^16).
const maxRails = 16

// Choice is Choose's answer: the rail set and the nodes with room for a
// pod on it.
type Choice struct {
	Set   Set
	Nodes []string
}

// Choose picks the rail set for a job of pods pods of gpus GPUs each: of
// the sets of whole rails that give a pod exactly gpus GPUs on some node,
// the one with room for a pod on the most nodes (ties: the lowest rails).
// A job of one pod still gets a set (any node will do). It fails with
// ErrNoRoom when no set has room on pods nodes (two pods of one job are
// never on one node: they would need the same rails twice).
func Choose(nodes []Node, pods, gpus int) (Choice, error) {
	if pods < 1 || gpus < 1 {
		return Choice{}, fmt.Errorf("%w: %d pods of %d GPUs", ErrInput, pods, gpus)
	}
	cands := map[string]Set{}
	for _, n := range nodes {
		rails := slices.Sorted(maps.Keys(n.Rails))
		if len(rails) > maxRails {
			return Choice{}, fmt.Errorf("%w: node %s has %d rails, more than %d", ErrInput, n.Name, len(rails), maxRails)
		}
		for mask := 1; mask < 1<<len(rails); mask++ {
			var sub []int64
			for i, r := range rails {
				if mask&(1<<i) != 0 && n.Rails[r].GPUs > 0 {
					sub = append(sub, r)
				}
			}
			s := setOn(n, sub)
			if len(s) == 0 || s.GPUs() != gpus {
				continue
			}
			if c, ok := cands[s.String()]; ok {
				s = c.withBusIDs(s)
			}
			cands[s.String()] = s
		}
	}
	if len(cands) == 0 {
		return Choice{}, fmt.Errorf("%w: no node has whole rails of exactly %d GPUs", ErrNoRoom, gpus)
	}
	var best Choice
	for _, s := range cands {
		room := s.room(nodes)
		if len(room) > len(best.Nodes) || len(room) == len(best.Nodes) && (best.Set == nil || lower(s, best.Set)) {
			best = Choice{Set: s, Nodes: room}
		}
	}
	if len(best.Nodes) < pods {
		return best, fmt.Errorf("%w: %d pods of %d GPUs; the best rail set, %s, has room on %d nodes", ErrNoRoom, pods, gpus, best.Set, len(best.Nodes))
	}
	return best, nil
}

// ChooseSet is Choose restricted to the rail set rails (sorted): an error
// when no node has exactly those whole rails for gpus GPUs, ErrNoRoom when
// fewer than pods nodes have room on it (the Choice still lists those
// that have).
func ChooseSet(nodes []Node, pods, gpus int, rails []int64) (Choice, error) {
	if pods < 1 || gpus < 1 || len(rails) == 0 {
		return Choice{}, fmt.Errorf("%w: %d pods of %d GPUs on rails %v", ErrInput, pods, gpus, rails)
	}
	var set Set
	for _, n := range nodes {
		s := setOn(n, rails)
		if s == nil || s.GPUs() != gpus {
			continue
		}
		if set == nil {
			set = s
		} else {
			set = set.withBusIDs(s)
		}
	}
	if set == nil {
		return Choice{}, fmt.Errorf("%w: no node has rails %v giving a pod exactly %d GPUs", ErrInput, rails, gpus)
	}
	c := Choice{Set: set, Nodes: set.room(nodes)}
	if len(c.Nodes) < pods {
		return c, fmt.Errorf("%w: rails %s have room for a pod on %d nodes, the job has %d pods", ErrNoRoom, set, len(c.Nodes), pods)
	}
	return c, nil
}

// setOn is the rail set rails on node n, each rail with all its GPUs and
// their addresses (a copy); nil when n lacks one of the rails or one has
// no GPU.
func setOn(n Node, rails []int64) Set {
	s := make(Set, 0, len(rails))
	for _, r := range rails {
		nr := n.Rails[r]
		if nr == nil || nr.GPUs == 0 {
			return nil
		}
		s = append(s, RailGPUs{Rail: r, GPUs: nr.GPUs, BusIDs: slices.Clone(nr.BusIDs)})
	}
	return s
}

// withBusIDs adds to s the GPU addresses of o, the same rails on another
// node (a heterogeneous cluster's template takes any of them).
func (s Set) withBusIDs(o Set) Set {
	for i := range s {
		s[i].BusIDs = slices.Compact(slices.Sorted(slices.Values(append(s[i].BusIDs, o[i].BusIDs...))))
	}
	return s
}

// room lists the nodes with room for a pod on s (fits), in the nodes'
// order.
func (s Set) room(nodes []Node) []string {
	var out []string
	for _, n := range nodes {
		if s.fits(n) {
			out = append(out, n.Name)
		}
	}
	return out
}

func lower(a, b Set) bool {
	return slices.CompareFunc(a, b, func(x, y RailGPUs) int { return cmp.Compare(x.Rail, y.Rail) }) < 0
}
