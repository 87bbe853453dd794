// Package simreport writes the result of a cluster simulation (package sim)
// as a self-contained HTML page with charts: the comparison table
// (sim.Result.Table, the same one `railyard simulate` prints as text) and
// settings, the share of GPUs by the class of their nearest NIC for each
// policy, the GPUDirect fraction, and the distribution of the pods'
// modelled bandwidth. Charts are drawn with internal/chart as PNG or SVG
// files beside index.html.
package simreport
