// Package deviceid holds the device ID formats railyard-agent hands kubelet
// and railyard-cni reads back from Multus: a function's PCI address, or
// share k of a PF shared by several pods ("0000:18:00.0-s3"). It is a leaf
// package so the CNI binary does not link the agent's packages.
package deviceid
