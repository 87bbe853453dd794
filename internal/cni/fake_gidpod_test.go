package cni

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/railyard-io/railyard/internal/cni/state"
)

// TestAddRecordsThePodFromCNIArgsFakeRDMA: ADD records the pod that
// CNI_ARGS names (as containerd and CRI-O pass it) next to the GID index,
// for the agent's Event on it; without CNI_ARGS the record names none.
func TestAddRecordsThePodFromCNIArgsFakeRDMA(t *testing.T) {
	w := newWorld(t)
	podSys := t.TempDir()
	gidTree(t, podSys, "mlx5_3", "net1", 2, "192.168.50.10")
	gidTree(t, podSys, "mlx5_4", "net2", 2, "192.168.50.11")
	w.ops.SetSysfs(pod1, podSys)
	p := w.plugin()
	a := args("c1", pod1, "net1", w.conf(vfPCI, nil))
	a.PluginArgs = "IgnoreUnknown=1;K8S_POD_NAMESPACE=ml;K8S_POD_NAME=trainer-0;K8S_POD_INFRA_CONTAINER_ID=c1;K8S_POD_UID=4c1b8e0e-0f9e-4d4e-9a55-1a2b3c4d5e6f"
	if _, err := p.Add(ctx, a); err != nil {
		t.Fatal(err)
	}
	want := &state.PodRef{Namespace: "ml", Name: "trainer-0", UID: "4c1b8e0e-0f9e-4d4e-9a55-1a2b3c4d5e6f"}
	if diff := cmp.Diff(want, recordOf(t, w, vfPCI).Pod); diff != "" {
		t.Errorf("net1's pod (-want +got):\n%s", diff)
	}
	if _, err := p.Add(ctx, args("c1", pod1, "net2", w.conf(vf2PCI, map[string]any{"mac": "02:bb:00:00:00:02"}))); err != nil {
		t.Fatal(err)
	}
	if got := recordOf(t, w, vf2PCI).Pod; got != nil {
		t.Errorf("an ADD without CNI_ARGS recorded pod %+v", got)
	}
}
