// Package podlist lists kubelet's PodResources (v1 List) without linking
// gRPC: one unary gRPC call is an HTTP/2 POST, which net/http makes over
// cleartext HTTP/2 on kubelet's unix socket, and the answer is decoded
// with protowire into the few fields late binding reads (pods, containers,
// resource names and device IDs). It is Railyard's only PodResources
// client: railyard-cni uses it so that its binary does not grow by the
// ~11 MB gRPC costs, and the agent (gpu-aware's finder, rail groups, late
// binding) and `railyard node apply` use the same one. Every user takes a
// Lister. The decoder never panics on bad input (fuzzed) and the client is
// tested against a real gRPC PodResources server.
package podlist
