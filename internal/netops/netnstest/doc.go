// Package netnstest creates real network namespaces and veth pairs for
// tests that need root, with unique names (the test process's PID) and
// cleanup registered on the test, so parallel test binaries do not collide
// and nothing is left behind even when a test fails. It only touches
// namespaces and links it created.
package netnstest
