// Command printversion prints version.String(); built by version_test.go.
package main

import (
	"fmt"

	"github.com/railyard-io/railyard/internal/version"
)

func main() { fmt.Print(version.String()) }
