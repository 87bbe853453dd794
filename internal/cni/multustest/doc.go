// Package multustest plays Multus in tests: it builds exactly the
// configuration and runtime arguments Multus hands a delegate CNI plugin of
// a NetworkAttachmentDefinition with a resourceName (the delegate's name
// and so its device-info file's name included), so railyard-cni is
// tested against what Multus really sends. Multus itself is not on the Go
// module proxy; this mirrors its source (multus-cni pkg/types/conf.go and
// pkg/k8sclient/k8sclient.go at 95a0932, August 2026;
// network-attachment-definition-client pkg/utils/cniconfig.go), rule by
// rule with the function each mirrors named, and callers pass the result
// to the real libcni.
package multustest
