// Package statetest holds helpers for tests of state directories on a file
// system that refuses writes: railyard-cni's (internal/cni/state) and late
// binding's (internal/binding, as the agent uses it). ReadOnly makes a
// directory read-only (a read-only bind mount), FullTmpfs puts a full file
// system on it. Both need root and skip the test without it. Tests only.
package statetest
