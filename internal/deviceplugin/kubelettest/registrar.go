package kubelettest

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
)

// Registrar is kubelet's Registration service, recording requests.
type Registrar struct {
	pluginapi.UnimplementedRegistrationServer
	srv  *grpc.Server
	reqs chan *pluginapi.RegisterRequest
}

var _ pluginapi.RegistrationServer = (*Registrar)(nil)

// Register records the request.
func (r *Registrar) Register(_ context.Context, req *pluginapi.RegisterRequest) (*pluginapi.Empty, error) {
	r.reqs <- req
	return &pluginapi.Empty{}, nil
}

// StartRegistrar serves the Registration service on dir/kubelet.sock until
// the test ends.
func StartRegistrar(t testing.TB, dir string) *Registrar {
	t.Helper()
	sock := filepath.Join(dir, "kubelet.sock")
	_ = os.Remove(sock)
	lis, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	r := &Registrar{srv: grpc.NewServer(), reqs: make(chan *pluginapi.RegisterRequest, 16)}
	pluginapi.RegisterRegistrationServer(r.srv, r)
	go func() { _ = r.srv.Serve(lis) }()
	t.Cleanup(r.srv.Stop)
	return r
}

// Stop stops serving, as a kubelet going away does.
func (r *Registrar) Stop() { r.srv.Stop() }

// Wait returns the next registration, failing the test after 10 s.
func (r *Registrar) Wait(t testing.TB) *pluginapi.RegisterRequest {
	t.Helper()
	select {
	case req := <-r.reqs:
		return req
	case <-time.After(10 * time.Second):
		t.Fatal("no registration within 10s")
		return nil
	}
}

// WaitAll waits for one registration of each resource.
func (r *Registrar) WaitAll(t testing.TB, resources ...string) {
	t.Helper()
	want := map[string]bool{}
	for _, res := range resources {
		want[res] = true
	}
	deadline := time.After(10 * time.Second)
	for len(want) > 0 {
		select {
		case req := <-r.reqs:
			delete(want, req.ResourceName)
		case <-deadline:
			t.Fatalf("not registered within 10s: %v", want)
		}
	}
}

// None fails the test if a registration arrives within d.
func (r *Registrar) None(t testing.TB, d time.Duration) {
	t.Helper()
	select {
	case req := <-r.reqs:
		t.Fatalf("unexpected registration: %+v", req)
	case <-time.After(d):
	}
}
