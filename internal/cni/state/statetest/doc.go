// Package statetest holds helpers for tests of railyard-cni's state
// directory: a read-only state directory (a read-only bind mount). Tests
// only.
package statetest
