// Command railyard-cni-install copies railyard-cni into the node's CNI bin
// directory atomically (the chart's init container); see internal/cniinstall.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/railyard-io/railyard/internal/cniinstall"
)

func main() {
	if err := cniinstall.Run(context.Background(), os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "railyard-cni-install:", err)
		os.Exit(1)
	}
}
