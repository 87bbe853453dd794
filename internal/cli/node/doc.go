// Package node implements `railyard node apply`: it makes this node's
// SR-IOV state match a node policy with internal/nodesetup, prints what it
// changed, and with --watch applies again whenever the policy file changes.
package node
