// Package kubelettest holds the one hand-written kubelet stand-in Railyard's
// tests use: kubelet's device plugin Registration service on
// <dir>/kubelet.sock, recording every request. Everything else a plugin
// serves is exercised through real gRPC clients, and the end-to-end suite
// uses a real kubelet.
package kubelettest
