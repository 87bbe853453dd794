package deviceplugin

import (
	"testing"

	"github.com/railyard-io/railyard/internal/podresources/podlist"
	"github.com/railyard-io/railyard/internal/podresources/podrestest"
)

// startPodResourcesStandIn serves kubelet's PodResources (pods the test
// adds, devices it records the way kubelet does, right after each
// Allocate returns; see kubeletSim) and returns a client of it.
func startPodResourcesStandIn(t testing.TB) (*podrestest.Server, *podlist.Client) {
	t.Helper()
	s := podrestest.Start(t, "")
	client := podlist.New(s.Socket)
	t.Cleanup(client.Close)
	return s, client
}
