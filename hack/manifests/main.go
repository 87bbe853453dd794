// Command manifests renders deploy/*.yaml from the Helm chart
// (`make manifests`); see internal/helmchart.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/railyard-io/railyard/internal/helmchart"
)

func main() {
	if err := helmchart.Run(context.Background(), os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "manifests:", err)
		os.Exit(1)
	}
}
