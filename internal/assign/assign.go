package assign

import (
	"errors"
	"fmt"
	"math"
)

// ErrShape is returned when the cost matrix cannot be assigned: more rows
// than columns, or rows of different lengths.
var ErrShape = errors.New("assign: bad cost matrix shape")

// Solve returns, for every row, the column assigned to it, and the total
// cost, minimal over all assignments of distinct columns to rows. Costs must
// be finite and at most 1e15 in magnitude. The result is deterministic: for
// equal inputs it returns equal outputs.
func Solve(cost [][]int64) ([]int, int64, error) {
	n := len(cost)
	if n == 0 {
		return nil, 0, nil
	}
	m := len(cost[0])
	if m < n {
		return nil, 0, fmt.Errorf("%w: %d rows but only %d columns", ErrShape, n, m)
	}
	for i, r := range cost {
		if len(r) != m {
			return nil, 0, fmt.Errorf("%w: row %d has %d columns, row 0 has %d", ErrShape, i, len(r), m)
		}
	}
	const inf = math.MaxInt64 / 4
	// 1-based arrays as in the classic formulation: p[j] is the row matched
	// to column j, u and v the row and column potentials.
	u := make([]int64, n+1)
	v := make([]int64, m+1)
	p := make([]int, m+1)
	way := make([]int, m+1)
	minv := make([]int64, m+1)
	used := make([]bool, m+1)
	for i := 1; i <= n; i++ {
		p[0] = i
		j0 := 0
		for j := range minv {
			minv[j] = inf
			used[j] = false
		}
		for {
			used[j0] = true
			i0 := p[j0]
			delta := int64(inf)
			j1 := 0
			row := cost[i0-1]
			for j := 1; j <= m; j++ {
				if used[j] {
					continue
				}
				cur := row[j-1] - u[i0] - v[j]
				if cur < minv[j] {
					minv[j] = cur
					way[j] = j0
				}
				if minv[j] < delta {
					delta = minv[j]
					j1 = j
				}
			}
			for j := 0; j <= m; j++ {
				if used[j] {
					u[p[j]] += delta
					v[j] -= delta
				} else {
					minv[j] -= delta
				}
			}
			j0 = j1
			if p[j0] == 0 {
				break
			}
		}
		for {
			j1 := way[j0]
			p[j0] = p[j1]
			j0 = j1
			if j0 == 0 {
				break
			}
		}
	}
	rowToCol := make([]int, n)
	var total int64
	for j := 1; j <= m; j++ {
		if p[j] != 0 {
			rowToCol[p[j]-1] = j - 1
			total += cost[p[j]-1][j-1]
		}
	}
	return rowToCol, total, nil
}
