//go:build tools

// Package kueuecrds pins Kueue, whose CRDs (config/components/crd/bases in
// the module cache) the multi-node e2e test TestRailsSchedulerKueue serves
// from the test cluster's kube-apiserver to check the objects `railyard
// rails scheduler kueue` prints. It has no code of its own; the import
// keeps `go mod tidy` from dropping the requirement.
package kueuecrds

import _ "sigs.k8s.io/kueue/apis/kueue/v1beta2"
