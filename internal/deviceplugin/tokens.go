package deviceplugin

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/railyard-io/railyard/internal/binding"
)

// Binder binds the tokens of a pool in sandbox binding mode (late
// binding, internal/binding). A plugin whose Config has one advertises
// tokens (the agent feeds them to Update as devices whose ID is the token)
// instead of devices, and asks kubelet for PreStartContainer.
type Binder interface {
	// BindTokens binds every token of the pod whose container holds
	// tokens, if not bound yet (PreStartContainer: kubelet calls it after
	// the pod's sandbox exists and before the container is created).
	BindTokens(ctx context.Context, resource string, tokens []string) error
	// Allocated says kubelet allocated tokens (not bound yet), so their
	// health is judged last.
	Allocated(resource string, tokens []string)
}

// preferTokens answers GetPreferredAllocation for tokens: kubelet's
// must-include tokens, then tokens of the NUMA nodes of the pod's GPUs
// when they are known, then the rest, each by NUMA node and index. Which
// device a token gets is decided when it is bound, so this only keeps the
// tokens on the GPUs' NUMA nodes when Topology Manager did not.
func (p *Plugin) preferTokens(ctx context.Context, snap *snapshot, req *pluginapi.PreferredAllocationRequest) (*pluginapi.PreferredAllocationResponse, error) {
	resp := &pluginapi.PreferredAllocationResponse{}
	for _, cr := range req.GetContainerRequests() {
		size := int(cr.GetAllocationSize())
		if size < 0 || size > len(cr.GetAvailableDeviceIDs()) || len(cr.GetMustIncludeDeviceIDs()) > size {
			return nil, status.Errorf(codes.InvalidArgument, "cannot choose %d of %d available tokens with %d must-include",
				size, len(cr.GetAvailableDeviceIDs()), len(cr.GetMustIncludeDeviceIDs()))
		}
		near := map[int]bool{}
		if p.cfg.Policy != nil && p.cfg.Policy.Needs().PodGPUs && snap.topo != nil {
			gpus, _ := p.podGPUs(ctx)
			for _, g := range gpus {
				if gg, ok := snap.topo.GPU(g); ok {
					near[gg.NUMA] = true
				}
			}
		}
		type cand struct {
			id  string
			tok binding.TokenID
		}
		var cands []cand
		for _, id := range cr.GetAvailableDeviceIDs() {
			if slices.Contains(cr.GetMustIncludeDeviceIDs(), id) {
				continue
			}
			t, err := binding.ParseToken(id)
			if err != nil {
				t = binding.TokenID{NUMA: -1, K: binding.MaxTokenIndex + 1}
			}
			cands = append(cands, cand{id, t})
		}
		slices.SortFunc(cands, func(a, b cand) int {
			return cmp.Or(cmp.Compare(boolRank(!near[a.tok.NUMA]), boolRank(!near[b.tok.NUMA])),
				cmp.Compare(a.tok.NUMA, b.tok.NUMA), cmp.Compare(a.tok.K, b.tok.K), strings.Compare(a.id, b.id))
		})
		chosen := slices.Clone(cr.GetMustIncludeDeviceIDs())
		for _, c := range cands {
			if len(chosen) >= size {
				break
			}
			chosen = append(chosen, c.id)
		}
		resp.ContainerResponses = append(resp.ContainerResponses, &pluginapi.ContainerPreferredAllocationResponse{DeviceIDs: chosen})
	}
	return resp, nil
}

func boolRank(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TokensEnvName is the variable listing a container's tokens of a pool
// ("RAILYARD_TOKENS_RAILYARD_IO_RDMA_VF"), for debugging.
func TokensEnvName(resource string) string {
	return "RAILYARD_TOKENS_" + strings.TrimPrefix(EnvName(resource), "PCIDEVICE_")
}

// allocateTokens answers Allocate for tokens: one CDI device per token,
// whose spec the binder writes when it binds the token (at the sandbox's
// CNI ADD or at PreStartContainer, both before the runtime resolves CDI
// devices at CreateContainer). Nothing else can be said yet.
func (p *Plugin) allocateTokens(snap *snapshot, req *pluginapi.AllocateRequest) (*pluginapi.AllocateResponse, error) {
	resp := &pluginapi.AllocateResponse{}
	for _, cr := range req.GetContainerRequests() {
		ids := cr.GetDevicesIds()
		if len(ids) == 0 {
			return nil, status.Error(codes.InvalidArgument, "no tokens requested")
		}
		car := &pluginapi.ContainerAllocateResponse{Envs: map[string]string{}}
		for _, id := range ids {
			e, ok := snap.devs[id]
			if !ok {
				return nil, status.Errorf(codes.NotFound, "token %s is not in pool %s", id, p.cfg.Resource)
			}
			if !e.vanishedAt.IsZero() {
				return nil, status.Errorf(codes.Unavailable, "token %s of pool %s is gone", id, p.cfg.Resource)
			}
			car.CdiDevices = append(car.CdiDevices, &pluginapi.CDIDevice{Name: binding.CDIName(id)})
		}
		car.Envs[TokensEnvName(p.cfg.Resource)] = strings.Join(ids, ",")
		p.cfg.Binder.Allocated(p.cfg.Resource, ids)
		resp.ContainerResponses = append(resp.ContainerResponses, car)
		p.cfg.Metrics.ObserveAllocate(p.cfg.Resource, len(ids))
		p.cfg.Log.Info("allocated tokens", "resource", p.cfg.Resource, "tokens", ids)
	}
	return resp, nil
}

// preStart binds the tokens of the starting container's pod.
func (p *Plugin) preStart(ctx context.Context, req *pluginapi.PreStartContainerRequest) (*pluginapi.PreStartContainerResponse, error) {
	if p.cfg.Binder == nil {
		return &pluginapi.PreStartContainerResponse{}, nil
	}
	start := time.Now()
	if err := p.cfg.Binder.BindTokens(ctx, p.cfg.Resource, req.GetDevicesIds()); err != nil {
		p.cfg.Log.Error("binding tokens before the container starts", "resource", p.cfg.Resource, "tokens", req.GetDevicesIds(), "err", err)
		return nil, status.Errorf(codes.Unavailable, "binding tokens %v of %s: %v", req.GetDevicesIds(), p.cfg.Resource, err)
	}
	p.cfg.Log.Debug("tokens bound before container start", "resource", p.cfg.Resource, "tokens", req.GetDevicesIds(), "took", time.Since(start))
	return &pluginapi.PreStartContainerResponse{}, nil
}
