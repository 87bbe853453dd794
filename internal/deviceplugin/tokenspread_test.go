package deviceplugin

import (
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/railyard-io/railyard/internal/binding"
)

// tokens returns n tokens on each of the given NUMA nodes.
func tokens(t *testing.T, perNode map[int]int) []string {
	t.Helper()
	var out []string
	for _, n := range slices.Sorted(maps.Keys(perNode)) {
		for k := range perNode[n] {
			id := fmt.Sprintf("tok-0123abcd-n%d-%d", n, k)
			if _, err := binding.ParseToken(id); err != nil {
				t.Fatalf("test token %s: %v", id, err)
			}
			out = append(out, id)
		}
	}
	return out
}

func perNUMA(t *testing.T, ids []string) map[int]int {
	t.Helper()
	out := map[int]int{}
	for _, id := range ids {
		tok, err := binding.ParseToken(id)
		if err != nil {
			t.Fatal(err)
		}
		out[tok.NUMA]++
	}
	return out
}

// TestSpreadTokensFollowsThePodsGPUs: tokens go to NUMA nodes in
// proportion to the pod's GPUs there, so a pod spanning two nodes gets
// tokens, and so NICs, on both (taking the lowest node's first starved the
// other node's GPUs: the simulator measured half of an 8-GPU pod's GPUs far
// from their NIC). Without the GPUs the spread is even.
func TestSpreadTokensFollowsThePodsGPUs(t *testing.T) {
	avail := tokens(t, map[int]int{0: 8, 1: 8})
	cases := []struct {
		name    string
		must    []string
		size    int
		gpuNUMA []int
		want    map[int]int
	}{
		{"8 GPUs, 4 per node", nil, 8, []int{0, 0, 0, 0, 1, 1, 1, 1}, map[int]int{0: 4, 1: 4}},
		{"3 GPUs on 1, 1 on 0", nil, 4, []int{1, 1, 1, 0}, map[int]int{0: 1, 1: 3}},
		{"one GPU on node 1", nil, 1, []int{1}, map[int]int{1: 1}},
		{"more tokens than the GPUs' nodes hold", nil, 10, []int{1}, map[int]int{1: 8, 0: 2}},
		{"GPUs unknown: even", nil, 4, nil, map[int]int{0: 2, 1: 2}},
		{"must-include counts toward its node", []string{avail[0], avail[1]}, 4, []int{0, 1}, map[int]int{0: 2, 1: 2}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := spreadTokens(avail, c.must, c.size, c.gpuNUMA)
			if len(got) != c.size {
				t.Fatalf("chose %d tokens, want %d: %v", len(got), c.size, got)
			}
			for _, m := range c.must {
				if !slices.Contains(got, m) {
					t.Errorf("must-include %s dropped", m)
				}
			}
			if n := perNUMA(t, got); !maps.Equal(n, c.want) {
				t.Errorf("per NUMA node %v, want %v (%v)", n, c.want, got)
			}
			if len(slices.Compact(slices.Sorted(slices.Values(got)))) != len(got) {
				t.Errorf("a token chosen twice: %v", got)
			}
		})
	}
	// Within a node, lowest index first; an unparsable ID comes last.
	got := spreadTokens(append([]string{"not-a-token"}, avail...), nil, 17, []int{0})
	if got[0] != "tok-0123abcd-n0-0" || got[16] != "not-a-token" {
		t.Errorf("order %v", got)
	}
}
