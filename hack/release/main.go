// Command release cuts a Railyard release into one directory (`make
// release VERSION=X.Y.Z [OUT=dir]`): image archives for amd64 and arm64
// (and their infiniband-diags variants), a CycloneDX SBOM per image, the
// Helm chart packaged with the same version, and SHA256SUMS; see
// internal/release and docs/release.md.
//
//	go run ./hack/release --version 0.2.0 --revision $(git rev-parse HEAD) --created $(git log -1 --format=%ct)
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/railyard-io/railyard/internal/release"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := release.Run(ctx, os.Args[1:], os.LookupEnv, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(1)
	}
}
