//go:build tools

// Package containerdbin pins the containerd commands that
// hack/cluster/build.sh containerd builds. It has no code of its own.
package containerdbin

import (
	_ "github.com/containerd/containerd/v2/cmd/containerd"
	_ "github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2"
	_ "github.com/containerd/containerd/v2/cmd/ctr"
)
