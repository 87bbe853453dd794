// Command railyard-cni is the Railyard CNI plugin; see internal/cni.
package main

import (
	"context"
	"os"
	"runtime"

	"github.com/railyard-io/railyard/internal/cni"
)

// init pins main to the thread group leader: namespace switches (setns)
// apply to one OS thread, so the goroutine must not migrate.
func init() { runtime.LockOSThread() }

func main() {
	if err := cni.Run(context.Background()); err != nil {
		os.Exit(1)
	}
}
