//go:build tools

// Package whereaboutsbin pins the whereabouts CNI IPAM plugin that
// hack/cluster/build.sh whereabouts builds. It has no code of its own. Its
// CRDs come from the same module version (doc/crds in the module cache).
package whereaboutsbin

import _ "github.com/k8snetworkplumbingwg/whereabouts/cmd"
