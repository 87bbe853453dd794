//go:build tools

// Package k8sbin137 pins the Kubernetes v1.37 commands that
// hack/cluster/build.sh k8s-1.37 builds. It has no code of its own.
package k8sbin137

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-proxy"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubectl"
	_ "k8s.io/kubernetes/cmd/kubelet"
)
