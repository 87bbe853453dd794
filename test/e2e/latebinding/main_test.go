//go:build e2e

package latebinding

import (
	"os"
	"testing"

	"github.com/railyard-io/railyard/test/e2e/framework"
)

// suite is the cluster of this package: containerd v2 with CDI.
// containerd runs up to two CNI networks per pod: the bridge, and the
// railyard-cni network TestLateBindingThroughContainerdCNI adds.
var suite = &framework.Suite{Name: "latebinding", ContainerdV2: true, CNINetworks: 2}

func TestMain(m *testing.M) { os.Exit(suite.Run(m)) }
