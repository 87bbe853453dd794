// Package v1alpha1 is version v1alpha1 of the railyard-agent configuration
// (apiVersion railyard.io/v1alpha1, kind AgentConfig): the resource pools
// the agent serves to kubelet and where it finds the node's files.
//
// Load decodes strictly (unknown fields are errors), then Default fills in
// what was left out, then Validate reports every problem with its field
// path, so a bad file fails start-up with all its errors at once.
package v1alpha1
