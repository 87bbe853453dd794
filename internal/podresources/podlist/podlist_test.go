package podlist

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/railyard-io/railyard/internal/podresources/podrestest"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	podresourcesapi "k8s.io/kubelet/pkg/apis/podresources/v1"
)

func sample() *podresourcesapi.ListPodResourcesResponse {
	return &podresourcesapi.ListPodResourcesResponse{PodResources: []*podresourcesapi.PodResources{
		{Name: "trainer", Namespace: "ml", Containers: []*podresourcesapi.ContainerResources{
			{Name: "main", CpuIds: []int64{1, 2}, Devices: []*podresourcesapi.ContainerDevices{
				{ResourceName: "nvidia.com/gpu", DeviceIds: []string{"GPU-1", "GPU-2"},
					Topology: &podresourcesapi.TopologyInfo{Nodes: []*podresourcesapi.NUMANode{{ID: 1}}}},
				{ResourceName: "railyard.io/rdma_vf", DeviceIds: []string{"tok-5c0e1f2a-n1-0"}}}},
			{Name: "sidecar"}}},
		{Name: "idle", Namespace: "default"},
	}}
}

var want = []Pod{
	{Namespace: "ml", Name: "trainer", Containers: []Container{
		{Name: "main", Devices: []Devices{{Resource: "nvidia.com/gpu", IDs: []string{"GPU-1", "GPU-2"}}, {Resource: "railyard.io/rdma_vf", IDs: []string{"tok-5c0e1f2a-n1-0"}}}},
		{Name: "sidecar"}}},
	{Namespace: "default", Name: "idle"},
}

// TestListAgainstRealGRPCServer: the hand-made call gets what the real
// gRPC server answers, twice over one client, and a gRPC error status.
func TestListAgainstRealGRPCServer(t *testing.T) {
	s := podrestest.Start(t, "")
	s.Set(sample().PodResources...)
	c := New(s.Socket)
	defer c.Close()
	for range 2 {
		got, err := c.List(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("List (-want +got):\n%s", diff)
		}
	}
	s.SetError(status.Error(codes.Unavailable, "kubelet is busy"))
	_, err := c.List(context.Background())
	if err == nil || !strings.Contains(err.Error(), "gRPC status 14: kubelet is busy") {
		t.Errorf("error status: %v", err)
	}
	s.SetError(nil)
	s.Set()
	if got, err := c.List(context.Background()); err != nil || len(got) != 0 {
		t.Errorf("empty list: %v, %v", got, err)
	}
	if _, err := New(filepath.Join(t.TempDir(), "none.sock")).List(context.Background()); err == nil {
		t.Error("missing socket: no error")
	}
}

// TestDecodeMatchesProto: Decode reads what the generated code writes.
func TestDecodeMatchesProto(t *testing.T) {
	b, err := proto.Marshal(sample())
	if err != nil {
		t.Fatal(err)
	}
	got, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("Decode (-want +got):\n%s", diff)
	}
	if _, err := Decode(b[:len(b)-3]); err == nil {
		t.Error("truncated message decoded")
	}
	if _, err := unframe([]byte{1, 0, 0, 0, 0}); err == nil {
		t.Error("compressed frame accepted")
	}
	if _, err := unframe([]byte{0, 0, 0, 0, 9, 1}); err == nil {
		t.Error("short frame accepted")
	}
}

// FuzzDecode: never panics; whatever the generated code can parse, Decode
// parses to the same pods.
func FuzzDecode(f *testing.F) {
	b, _ := proto.Marshal(sample())
	f.Add(b)
	f.Add([]byte{0x0a, 0x02, 0x0a})
	f.Add([]byte{0x08, 0x96, 0x01})
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := Decode(b)
		var ref podresourcesapi.ListPodResourcesResponse
		if proto.Unmarshal(b, &ref) != nil || err != nil {
			return
		}
		if len(got) != len(ref.PodResources) {
			t.Fatalf("%d pods, proto says %d", len(got), len(ref.PodResources))
		}
		for i, p := range ref.PodResources {
			if got[i].Name != p.Name || got[i].Namespace != p.Namespace || len(got[i].Containers) != len(p.Containers) {
				t.Fatalf("pod %d: %+v vs %v", i, got[i], p)
			}
		}
	})
}
