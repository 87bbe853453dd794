// Package latebinding is the end-to-end test of late binding (a pool with
// binding: sandbox) on a real single-node cluster whose containerd is
// v2.4.2 built from the module proxy (it has CDI; Debian's 1.6 has none).
// It starts its own cluster, so it runs as its own package (build tag e2e).
package latebinding
