//go:build tools

// Package helmbin pins Helm's command-line client that hack/cluster/build.sh
// helm builds: the multi-node e2e installs the packaged release chart with
// the real `helm install` (test/e2e/multinode/release_test.go). It has no
// code of its own, and the railyard module links no Helm action client.
package helmbin

import _ "helm.sh/helm/v3/cmd/helm"
