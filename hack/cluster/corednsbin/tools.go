//go:build tools

// Package corednsbin pins the CoreDNS command that hack/cluster/build.sh
// coredns builds. It has no code of its own.
package corednsbin

import _ "github.com/coredns/coredns"
