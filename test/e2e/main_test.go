//go:build e2e

package e2e

import (
	"os"
	"testing"

	"github.com/railyard-io/railyard/test/e2e/framework"
)

// suite is the one cluster every test in this package shares; containerd
// runs up to two CNI networks per pod (the bridge, and one a test adds).
var suite = &framework.Suite{Name: "e2e", CNINetworks: 2}

func TestMain(m *testing.M) { os.Exit(suite.Run(m)) }
