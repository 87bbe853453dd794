package multus

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/railyard-io/railyard/internal/podresources/podlist"
)

func TestCNIArgs(t *testing.T) {
	args := "IgnoreUnknown=1;K8S_POD_NAMESPACE=team-a;K8S_POD_NAME=p-0;K8S_POD_INFRA_CONTAINER_ID=abc"
	if got := cniArg(args, "K8S_POD_NAMESPACE") + "/" + cniArg(args, "K8S_POD_NAME"); got != "team-a/p-0" {
		t.Errorf("pod = %q", got)
	}
	if got := cniArg(args, "K8S_POD_UID"); got != "" {
		t.Errorf("absent argument = %q", got)
	}
}

// TestIsList: LoadDelegateNetConf treats a config without "type" as a
// conflist.
func TestIsList(t *testing.T) {
	if !isList([]byte(`{"name":"n","plugins":[{"type":"railyard-cni"}]}`)) || isList([]byte(`{"name":"n","type":"railyard-cni"}`)) {
		t.Error("isList")
	}
}

// TestDeviceIDsOfThePodAndResourceOnly: GetResourceMapFromClient's device
// IDs of one pod and resource, across its containers, in order.
func TestDeviceIDsOfThePodAndResourceOnly(t *testing.T) {
	pods := []podlist.Pod{
		{Namespace: "default", Name: "a", Containers: []podlist.Container{
			{Name: "main", Devices: []podlist.Devices{{Resource: "railyard.io/rail1", IDs: []string{"0000:3b:00.0"}}, {Resource: "nvidia.com/gpu", IDs: []string{"GPU-1"}}}},
			{Name: "side", Devices: []podlist.Devices{{Resource: "railyard.io/rail1", IDs: []string{"0000:3c:00.0"}}}},
		}},
		{Namespace: "other", Name: "a", Containers: []podlist.Container{{Devices: []podlist.Devices{{Resource: "railyard.io/rail1", IDs: []string{"0000:99:00.0"}}}}}},
	}
	if diff := cmp.Diff([]string{"0000:3b:00.0", "0000:3c:00.0"}, deviceIDs(pods, "default", "a", "railyard.io/rail1")); diff != "" {
		t.Errorf("deviceIDs (-want +got):\n%s", diff)
	}
}
