// Package podrestest stands in for kubelet's PodResources endpoint in
// tests: a real gRPC PodResources v1 server on a unix socket whose pods the
// test sets, as kubelet's pod manager and device manager would. It is the
// one stand-in the packages' tests share.
package podrestest
