package assign

import (
	"errors"
	"math/rand/v2"
	"testing"
)

// bruteForce returns the minimal total cost by trying every injection.
func bruteForce(cost [][]int64) int64 {
	n, m := len(cost), len(cost[0])
	best := int64(-1)
	used := make([]bool, m)
	var rec func(i int, sum int64)
	rec = func(i int, sum int64) {
		if i == n {
			if best < 0 || sum < best {
				best = sum
			}
			return
		}
		for j := 0; j < m; j++ {
			if !used[j] {
				used[j] = true
				rec(i+1, sum+cost[i][j])
				used[j] = false
			}
		}
	}
	rec(0, 0)
	return best
}

func TestSolveMatchesBruteForce(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for trial := 0; trial < 500; trial++ {
		n := 1 + r.IntN(5)
		m := n + r.IntN(4)
		cost := make([][]int64, n)
		for i := range cost {
			cost[i] = make([]int64, m)
			for j := range cost[i] {
				cost[i][j] = int64(r.IntN(10))
			}
		}
		got, total, err := Solve(cost)
		if err != nil {
			t.Fatal(err)
		}
		seen := map[int]bool{}
		var sum int64
		for i, j := range got {
			if seen[j] {
				t.Fatalf("column %d assigned twice in %v", j, got)
			}
			seen[j] = true
			sum += cost[i][j]
		}
		if sum != total {
			t.Fatalf("reported total %d, assignment sums to %d", total, sum)
		}
		if want := bruteForce(cost); total != want {
			t.Fatalf("trial %d: total %d, brute force %d (cost %v)", trial, total, want, cost)
		}
	}
}

func TestSolveRejectsBadShapes(t *testing.T) {
	if _, _, err := Solve([][]int64{{1}, {2}}); !errors.Is(err, ErrShape) {
		t.Fatalf("2x1: got %v, want ErrShape", err)
	}
	if _, _, err := Solve([][]int64{{1, 2}, {3}}); !errors.Is(err, ErrShape) {
		t.Fatalf("ragged: got %v, want ErrShape", err)
	}
	if got, total, err := Solve(nil); err != nil || got != nil || total != 0 {
		t.Fatalf("empty: got %v %d %v", got, total, err)
	}
}
