// Package multustest plays Multus in tests: it builds exactly the
// configuration and runtime arguments Multus hands a delegate CNI plugin of
// a NetworkAttachmentDefinition with a resourceName, so railyard-cni is
// tested against what Multus really sends. Multus itself is not on the Go
// module proxy; this mirrors its source (multus-cni pkg/types/conf.go at
// 95a0932, August 2026), which callers pass to the real libcni.
package multustest
