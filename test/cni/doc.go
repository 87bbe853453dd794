// Package cni holds the integration tests of railyard-cni: the real binary
// driven by the real cnitool (containernetworking/cni v1.3.1) with the real
// host-local IPAM, and benchmarked against the reference host-device plugin
// (containernetworking/plugins v1.9.1), in real network namespaces with
// veth pairs standing in for VFs. They need root and the tools installed by
// hack/install-cni-tools.sh, and skip with a message otherwise.
package cni
