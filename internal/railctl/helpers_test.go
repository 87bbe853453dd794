package railctl

import (
	"context"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	"github.com/railyard-io/railyard/api/config/v1alpha1"
	"github.com/railyard-io/railyard/internal/dra"
	"github.com/railyard-io/railyard/internal/dra/gpustandin"
	"github.com/railyard-io/railyard/machines"
)

func typesUID(s string) types.UID { return types.UID(s) }

// slices is the ResourceSlices of nodes of a machine model: Railyard's
// VF pool on delivery dra and the stand-in GPU driver's GPUs (which
// publish pciBusID and pcieRoot as NVIDIA's driver does).
func clusterSlices(t *testing.T, machine string, nodes ...string) []*resourceapi.ResourceSlice {
	t.Helper()
	var out []*resourceapi.ResourceSlice
	for _, n := range nodes {
		topo, err := machines.Topology(context.Background(), machine, 2)
		if err != nil {
			t.Fatal(err)
		}
		ps, err := dra.Build(n, topo, []v1alpha1.Pool{{Name: "railyard.io/rdma", DeviceKind: "vf"}}, dra.Options{})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, dra.ResourceSlices(n, ps, 1)...)
		out = append(out, gpustandin.ResourceSlices(n, topo)...)
	}
	return out
}

func resourceQty(s string) resource.Quantity { return resource.MustParse(s) }
