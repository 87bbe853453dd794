//go:build e2e

package latebinding

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/railyard-io/railyard/internal/podresources/podlist"
	"github.com/railyard-io/railyard/internal/topology"
	"github.com/railyard-io/railyard/test/e2e/framework"
)

// standinGPUPlugin is a stand-in for the NVIDIA device plugin, named so:
// it advertises the fake tree's GPUs as nvidia.com/gpu (device IDs are
// their PCI addresses, each with its NUMA node) and its Allocate sets
// STANDIN_GPUS. Its Allocate also records the order kubelet used for the
// container: tokens first when PodResources already shows a container
// holding tokens and no GPU.
type standinGPUPlugin struct {
	pluginapi.UnimplementedDevicePluginServer
	gpus     []topology.GPU
	tokenRes string
	pods     *podlist.Client

	mu     sync.Mutex
	srv    *grpc.Server
	orders map[string]int
}

const gpuRes = "nvidia.com/gpu"

func (p *standinGPUPlugin) socket() string {
	return filepath.Join(framework.DevicePluginDir, "railyard-e2e-standin-gpu.sock")
}

// start serves on a new socket and registers with kubelet.
func (p *standinGPUPlugin) start(ctx context.Context) error {
	p.stop()
	_ = os.Remove(p.socket())
	lis, err := net.Listen("unix", p.socket())
	if err != nil {
		return err
	}
	srv := grpc.NewServer()
	pluginapi.RegisterDevicePluginServer(srv, p)
	go srv.Serve(lis)
	p.mu.Lock()
	p.srv = srv
	p.mu.Unlock()
	conn, err := grpc.NewClient("unix://"+filepath.Join(framework.DevicePluginDir, "kubelet.sock"), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	for {
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		_, err = pluginapi.NewRegistrationClient(conn).Register(rctx, &pluginapi.RegisterRequest{
			Version: pluginapi.Version, Endpoint: filepath.Base(p.socket()), ResourceName: gpuRes,
			Options: &pluginapi.DevicePluginOptions{}})
		cancel()
		if err == nil || ctx.Err() != nil {
			return err
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func (p *standinGPUPlugin) stop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.srv != nil {
		p.srv.Stop()
		p.srv = nil
	}
}

func (p *standinGPUPlugin) GetDevicePluginOptions(context.Context, *pluginapi.Empty) (*pluginapi.DevicePluginOptions, error) {
	return &pluginapi.DevicePluginOptions{}, nil
}

func (p *standinGPUPlugin) ListAndWatch(_ *pluginapi.Empty, s grpc.ServerStreamingServer[pluginapi.ListAndWatchResponse]) error {
	var devs []*pluginapi.Device
	for _, g := range p.gpus {
		devs = append(devs, &pluginapi.Device{ID: g.PCI, Health: pluginapi.Healthy,
			Topology: &pluginapi.TopologyInfo{Nodes: []*pluginapi.NUMANode{{ID: int64(g.NUMA)}}}})
	}
	if err := s.Send(&pluginapi.ListAndWatchResponse{Devices: devs}); err != nil {
		return err
	}
	<-s.Context().Done()
	return nil
}

func (p *standinGPUPlugin) Allocate(ctx context.Context, req *pluginapi.AllocateRequest) (*pluginapi.AllocateResponse, error) {
	order := "gpus-first"
	if pods, err := p.pods.List(ctx); err == nil {
		for _, pod := range pods {
			for _, c := range pod.Containers {
				tokens, gpus := false, false
				for _, d := range c.Devices {
					tokens = tokens || (d.Resource == p.tokenRes && len(d.IDs) > 0)
					gpus = gpus || (d.Resource == gpuRes && len(d.IDs) > 0)
				}
				if tokens && !gpus {
					order = "tokens-first"
				}
			}
		}
	} else {
		order = fmt.Sprintf("unknown (%v)", err)
	}
	p.mu.Lock()
	p.orders[order]++
	p.mu.Unlock()
	resp := &pluginapi.AllocateResponse{}
	for _, cr := range req.GetContainerRequests() {
		resp.ContainerResponses = append(resp.ContainerResponses, &pluginapi.ContainerAllocateResponse{
			Envs: map[string]string{"STANDIN_GPUS": strings.Join(cr.GetDevicesIds(), ",")}})
	}
	return resp, nil
}

func (p *standinGPUPlugin) PreStartContainer(context.Context, *pluginapi.PreStartContainerRequest) (*pluginapi.PreStartContainerResponse, error) {
	return &pluginapi.PreStartContainerResponse{}, nil
}

func (p *standinGPUPlugin) orderCounts() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := map[string]int{}
	for k, v := range p.orders {
		out[k] = v
	}
	return out
}
