// Command railyard-cni-install copies railyard-cni into the node's CNI bin
// directory atomically (the chart's init container); see internal/cniinstall.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/railyard-io/railyard/internal/cli/iostreams"
	"github.com/railyard-io/railyard/internal/cniinstall"
)

func main() {
	if err := cniinstall.Run(context.Background(), os.Args[1:], iostreams.Std()); err != nil {
		fmt.Fprintln(os.Stderr, "railyard-cni-install:", err)
		os.Exit(1)
	}
}
