// Command manifests renders deploy/*.yaml from the Helm chart
// (`make manifests`); see internal/helmchart.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/railyard-io/railyard/internal/cli/iostreams"
	"github.com/railyard-io/railyard/internal/helmchart"
)

func main() {
	if err := helmchart.Run(context.Background(), os.Args[1:], iostreams.Std()); err != nil {
		fmt.Fprintln(os.Stderr, "manifests:", err)
		os.Exit(1)
	}
}
