//go:build e2e

// Command reap tears down end-to-end cluster runs whose test binary died
// before its own teardown (killed, or panicked on the go test timeout).
// hack/e2e.sh runs it before and after the tests (under its lock); it does
// nothing when no run is stale.
//
//	go run -tags e2e ./test/e2e/reap [BASE_DIR]
package main

import (
	"fmt"
	"os"

	"github.com/railyard-io/railyard/test/e2e/framework"
)

func main() {
	base := os.TempDir()
	if len(os.Args) > 1 {
		base = os.Args[1]
	}
	logf := func(f string, a ...any) { fmt.Printf(f+"\n", a...) }
	if err := framework.ReapStale(base, logf); err != nil {
		fmt.Fprintln(os.Stderr, "reap:", err)
		os.Exit(1)
	}
}
