// Package fabric is the `railyard fabric` command: the cluster's rail x
// node wiring matrix and what is wrong with it (internal/fabric), from the
// ports each node's agent publishes on its Node object, or from a saved
// JSON file.
package fabric
