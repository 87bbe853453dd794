//go:build e2e

// Package e2e holds Railyard's end-to-end tests. They run against a real
// single-node Kubernetes (etcd, kube-apiserver, kube-scheduler, containerd,
// kubelet) that TestMain starts once with package framework and tears down at
// the end, even when tests fail. Run them with `make e2e` (hack/e2e.sh), which
// builds or installs everything first; they need root and skip without it.
package e2e
