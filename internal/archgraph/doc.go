// Package archgraph draws the module's layers and packages for
// docs/architecture.md as mermaid: first the layers alone (a box per
// layer of the table in layers.go, an arrow where a package of one imports
// one of the other), then every package in its layer (a subgraph) and the
// imports between the module's packages; both transitively reduced (an
// arrow is a direct import; an import that a longer path of arrows already
// implies is left out). Layers that import each other both ways are an
// error.
//
// `go run ./hack/archgraph -w` rewrites both in the document, and
// test/arch fails while the document and the code disagree, while layers
// import each other, or while a package has no layer (it is drawn in an
// "unassigned" group until someone adds it to the table).
package archgraph
