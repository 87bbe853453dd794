package kubelettest

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
)

// Dial connects to a device plugin's socket as kubelet does (a real gRPC
// client); the connection closes when the test ends.
func Dial(t testing.TB, socket string) pluginapi.DevicePluginClient {
	t.Helper()
	conn, err := grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return pluginapi.NewDevicePluginClient(conn)
}

// Stream reads a ListAndWatch stream in the background.
type Stream struct {
	lists chan []*pluginapi.Device
}

// Watch opens ListAndWatch; the stream ends with the test.
func Watch(t testing.TB, c pluginapi.DevicePluginClient) *Stream {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	s, err := c.ListAndWatch(ctx, &pluginapi.Empty{})
	if err != nil {
		t.Fatal(err)
	}
	st := &Stream{lists: make(chan []*pluginapi.Device, 256)}
	go func() {
		defer close(st.lists)
		for {
			resp, err := s.Recv()
			if err != nil {
				return
			}
			st.lists <- resp.Devices
		}
	}()
	return st
}

// Next waits up to timeout for a device list satisfying ok.
func (s *Stream) Next(t testing.TB, what string, timeout time.Duration, ok func([]*pluginapi.Device) bool) []*pluginapi.Device {
	t.Helper()
	deadline := time.After(timeout)
	for {
		select {
		case l, open := <-s.lists:
			if !open {
				t.Fatalf("stream ended waiting for %s", what)
			}
			if ok(l) {
				return l
			}
		case <-deadline:
			t.Fatalf("no list with %s within %s", what, timeout)
		}
	}
}

// Health maps device IDs to their health in a list.
func Health(list []*pluginapi.Device) map[string]string {
	m := make(map[string]string, len(list))
	for _, d := range list {
		m[d.ID] = d.Health
	}
	return m
}

// Open fails the test if the stream ends within d.
func (s *Stream) Open(t testing.TB, d time.Duration) {
	t.Helper()
	deadline := time.After(d)
	for {
		select {
		case _, open := <-s.lists:
			if !open {
				t.Fatal("stream ended")
			}
		case <-deadline:
			return
		}
	}
}
