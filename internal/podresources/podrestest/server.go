package podrestest

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
	podresourcesapi "k8s.io/kubelet/pkg/apis/podresources/v1"
)

// Server is a PodResources v1 List server with a settable answer.
type Server struct {
	podresourcesapi.UnimplementedPodResourcesListerServer
	// Socket is the unix socket it serves on.
	Socket string

	mu   sync.Mutex
	pods []*podresourcesapi.PodResources
	err  error
}

var _ podresourcesapi.PodResourcesListerServer = (*Server)(nil)

// Start serves on sock ("" for a socket in a short temporary directory:
// unix socket paths are limited to 108 bytes) until the test ends.
func Start(t testing.TB, sock string) *Server {
	t.Helper()
	if sock == "" {
		dir, err := os.MkdirTemp("", "rypr")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(dir) })
		sock = filepath.Join(dir, "kubelet.sock")
	}
	lis, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{Socket: sock}
	srv := grpc.NewServer()
	podresourcesapi.RegisterPodResourcesListerServer(srv, s)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	return s
}

// List answers with a copy of the pods (or the error set).
func (s *Server) List(context.Context, *podresourcesapi.ListPodResourcesRequest) (*podresourcesapi.ListPodResourcesResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return nil, s.err
	}
	// A deep copy, every field kept: gRPC encodes it after mu is released.
	out := make([]*podresourcesapi.PodResources, len(s.pods))
	for i, p := range s.pods {
		out[i] = proto.Clone(p).(*podresourcesapi.PodResources)
	}
	return &podresourcesapi.ListPodResourcesResponse{PodResources: out}, nil
}

// Set replaces the pods.
func (s *Server) Set(pods ...*podresourcesapi.PodResources) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pods = pods
}

// SetError makes List fail with err (nil answers again).
func (s *Server) SetError(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.err = err
}

// AddPod adds a pod of namespace "default" whose containers hold nothing
// yet, as kubelet's pod manager lists it before admission.
func (s *Server) AddPod(name string, containers ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := &podresourcesapi.PodResources{Name: name, Namespace: "default"}
	for _, c := range containers {
		p.Containers = append(p.Containers, &podresourcesapi.ContainerResources{Name: c})
	}
	s.pods = append(s.pods, p)
}

// Insert records devices of resource for a container, as kubelet does
// right after each Allocate returns.
func (s *Server) Insert(pod, container, resource string, ids []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.pods {
		if p.Name != pod {
			continue
		}
		for _, c := range p.Containers {
			if c.Name == container {
				c.Devices = append(c.Devices, &podresourcesapi.ContainerDevices{ResourceName: resource, DeviceIds: ids})
			}
		}
	}
}

// Pod is a pod of namespace "default" with one container, "main", holding
// devs (resource -> device IDs).
func Pod(name string, devs map[string][]string) *podresourcesapi.PodResources {
	c := &podresourcesapi.ContainerResources{Name: "main"}
	for r, ids := range devs {
		c.Devices = append(c.Devices, &podresourcesapi.ContainerDevices{ResourceName: r, DeviceIds: ids})
	}
	return &podresourcesapi.PodResources{Name: name, Namespace: "default", Containers: []*podresourcesapi.ContainerResources{c}}
}
