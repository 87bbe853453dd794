// Command archgraph prints docs/architecture.md's package graph from the
// code's imports, or with -w writes it into the document (`make
// archgraph`); see internal/archgraph.
package main

import (
	"fmt"
	"os"

	"github.com/railyard-io/railyard/internal/archgraph"
)

func main() {
	if err := archgraph.Run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "archgraph:", err)
		os.Exit(1)
	}
}
