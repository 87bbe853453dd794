// Package assign solves the rectangular assignment problem exactly: give
// each row (a GPU) a distinct column (a NIC slot or a device) so that the
// total cost is minimal. It is the Hungarian algorithm with potentials,
// O(rows² · cols), used for rails and for the optimal allocation policy.
package assign
