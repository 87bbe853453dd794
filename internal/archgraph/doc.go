// Package archgraph draws the module's package graph for
// docs/architecture.md as mermaid: every package in its layer (a subgraph,
// from the table in layers.go), and the imports between the module's
// packages, transitively reduced (an arrow is a direct import; an import
// that a longer path of arrows already implies is left out).
//
// `go run ./hack/archgraph -w` rewrites the graph in the document and
// test/arch fails while the document and the code disagree, or while a
// package has no layer (it is drawn in an "unassigned" group until someone
// adds it to the table).
package archgraph
