// Command railyard is the Railyard command-line tool: it shows a node's
// GPU/NIC topology, simulates allocation policies and judges benchmark runs.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/railyard-io/railyard/internal/cli"
	"github.com/railyard-io/railyard/internal/cli/iostreams"
)

func main() {
	ctx, stop := cli.NotifyContext(context.Background())
	defer stop()
	if err := cli.Run(ctx, os.Args[1:], iostreams.Std()); err != nil {
		fmt.Fprintln(os.Stderr, "railyard:", err)
		var coded interface{ ExitCode() int } // e.g. migrate: 1 lossy, 2 invalid input
		if errors.As(err, &coded) {
			os.Exit(coded.ExitCode())
		}
		os.Exit(1)
	}
}
