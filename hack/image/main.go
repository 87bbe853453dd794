// Command image builds Railyard's container image archive without a Docker
// daemon (`make images`); see internal/image and docs/install.md.
//
//	go run ./hack/image --version 0.1.0 --revision $(git rev-parse HEAD)
//	go run ./hack/image --version 0.1.0 --revision $(git rev-parse HEAD) --infiniband-diags
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/railyard-io/railyard/internal/image"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := image.Run(ctx, os.Args[1:], os.LookupEnv, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}
