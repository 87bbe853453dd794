package deviceplugin

import (
	"context"
	"net"
	"path/filepath"
	"sync"
	"testing"

	"github.com/railyard-io/railyard/internal/podresources/podlist"
	"google.golang.org/grpc"
	podresourcesapi "k8s.io/kubelet/pkg/apis/podresources/v1"
)

// podResourcesStandIn stands in for kubelet's PodResources endpoint: a
// real gRPC PodResources v1 server on a unix socket whose pods the test
// adds, and whose devices the test records the way kubelet does (right
// after each Allocate returns; see kubeletSim).
type podResourcesStandIn struct {
	podresourcesapi.UnimplementedPodResourcesListerServer
	mu   sync.Mutex
	pods []*podresourcesapi.PodResources
}

func (s *podResourcesStandIn) List(context.Context, *podresourcesapi.ListPodResourcesRequest) (*podresourcesapi.ListPodResourcesResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	// A deep enough copy: the test mutates pods only under mu.
	out := make([]*podresourcesapi.PodResources, len(s.pods))
	for i, p := range s.pods {
		cp := &podresourcesapi.PodResources{Name: p.Name, Namespace: p.Namespace}
		for _, c := range p.Containers {
			cc := &podresourcesapi.ContainerResources{Name: c.Name}
			cc.Devices = append(cc.Devices, c.Devices...)
			cp.Containers = append(cp.Containers, cc)
		}
		out[i] = cp
	}
	return &podresourcesapi.ListPodResourcesResponse{PodResources: out}, nil
}

// addPod adds a pod with containers that hold nothing yet, as kubelet's
// pod manager does before admission.
func (s *podResourcesStandIn) addPod(name string, containers ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := &podresourcesapi.PodResources{Name: name, Namespace: "default"}
	for _, c := range containers {
		p.Containers = append(p.Containers, &podresourcesapi.ContainerResources{Name: c})
	}
	s.pods = append(s.pods, p)
}

// insert records devices of resource for a container.
func (s *podResourcesStandIn) insert(pod, container, resource string, ids []string) {
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

// startPodResourcesStandIn serves the stand-in and returns a client of it.
func startPodResourcesStandIn(t testing.TB) (*podResourcesStandIn, *podlist.Client) {
	t.Helper()
	sock := filepath.Join(shortTempDir(t), "pr.sock")
	lis, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	s := &podResourcesStandIn{}
	podresourcesapi.RegisterPodResourcesListerServer(srv, s)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	client := podlist.New(sock)
	t.Cleanup(client.Close)
	return s, client
}
