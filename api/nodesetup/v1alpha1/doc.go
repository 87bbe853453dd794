// Package v1alpha1 is version v1alpha1 of the node policy (apiVersion
// railyard.io/v1alpha1, kind NodePolicy) that `railyard node apply` makes
// true on a node: per named physical function, how many SR-IOV virtual
// functions exist, which driver they are bound to, and the InfiniBand
// GUIDs or Ethernet MACs they carry.
//
// Load decodes strictly (unknown and duplicate fields are errors), then
// Default fills in what was left out, then Validate reports every problem
// with its field path. A PF that no entry names is never touched.
package v1alpha1
