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
	"github.com/railyard-io/railyard/internal/containerdev"
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
// must-include tokens, then tokens spread over NUMA nodes (spreadTokens).
// Which device a token gets is decided when it is bound, on the token's
// NUMA node, so the spread is what lets every GPU of a pod that spans NUMA
// nodes get a NIC near it.
func (p *Plugin) preferTokens(ctx context.Context, snap *snapshot, req *pluginapi.PreferredAllocationRequest) (*pluginapi.PreferredAllocationResponse, error) {
	resp := &pluginapi.PreferredAllocationResponse{}
	for _, cr := range req.GetContainerRequests() {
		size := int(cr.GetAllocationSize())
		if size < 0 || size > len(cr.GetAvailableDeviceIDs()) || len(cr.GetMustIncludeDeviceIDs()) > size {
			return nil, status.Errorf(codes.InvalidArgument, "cannot choose %d of %d available tokens with %d must-include",
				size, len(cr.GetAvailableDeviceIDs()), len(cr.GetMustIncludeDeviceIDs()))
		}
		var gpuNUMA []int
		if p.cfg.Policy != nil && p.cfg.Policy.Needs().PodGPUs && snap.topo != nil {
			gpus, _ := p.podGPUs(ctx)
			for _, g := range gpus {
				if gg, ok := snap.topo.GPU(g); ok {
					gpuNUMA = append(gpuNUMA, gg.NUMA)
				}
			}
		}
		chosen := spreadTokens(cr.GetAvailableDeviceIDs(), cr.GetMustIncludeDeviceIDs(), size, gpuNUMA)
		resp.ContainerResponses = append(resp.ContainerResponses, &pluginapi.ContainerPreferredAllocationResponse{DeviceIDs: chosen})
	}
	return resp, nil
}

// spreadTokens chooses size tokens: the must-include ones, then tokens
// spread over NUMA nodes in proportion to the pod's GPUs on each (gpuNUMA,
// one entry per GPU), or evenly over the offered nodes when the GPUs are
// not known yet (kubelet allocated the tokens first). Each pick goes to the
// node furthest below its share (lowest node on a tie), lowest index first
// within a node; nodes without pod GPUs come after those with, and tokens
// whose NUMA node is unknown last.
func spreadTokens(available, mustInclude []string, size int, gpuNUMA []int) []string {
	weight := map[int]int{}
	for _, n := range gpuNUMA {
		weight[n]++
	}
	byNode := map[int][]binding.TokenID{}
	ids := map[binding.TokenID]string{}
	for _, id := range available {
		if slices.Contains(mustInclude, id) {
			continue
		}
		t, err := binding.ParseToken(id)
		if err != nil {
			t = binding.TokenID{Tag: id, NUMA: -1, K: binding.MaxTokenIndex + 1}
		}
		byNode[t.NUMA] = append(byNode[t.NUMA], t)
		ids[t] = id
	}
	if len(weight) == 0 { // GPUs unknown: even over the offered nodes
		for n := range byNode {
			if n >= 0 {
				weight[n] = 1
			}
		}
	}
	nodes := make([]int, 0, len(byNode))
	for n, ts := range byNode {
		slices.SortFunc(ts, func(a, b binding.TokenID) int { return cmp.Or(cmp.Compare(a.K, b.K), strings.Compare(ids[a], ids[b])) })
		nodes = append(nodes, n)
	}
	slices.Sort(nodes)
	taken := map[int]int{}
	chosen := slices.Clone(mustInclude)
	for _, id := range mustInclude {
		if t, err := binding.ParseToken(id); err == nil {
			taken[t.NUMA]++
		}
	}
	total := 0
	for _, w := range weight {
		total += w
	}
	for len(chosen) < size {
		best := -2 // no node yet
		for _, n := range nodes {
			if len(byNode[n]) == 0 {
				continue
			}
			if best == -2 || better(n, best, weight, taken, total) {
				best = n
			}
		}
		if best == -2 {
			break
		}
		chosen = append(chosen, ids[byNode[best][0]])
		byNode[best] = byNode[best][1:]
		taken[best]++
	}
	return chosen
}

// better reports whether NUMA node a should get the next token before b:
// weighted nodes first (the unknown node -1 last), then the one furthest
// below its share of the weight, then the lower node.
func better(a, b int, weight, taken map[int]int, total int) bool {
	wa, wb := weight[a] > 0, weight[b] > 0
	if wa != wb {
		return wa
	}
	if (a < 0) != (b < 0) {
		return b < 0
	}
	if wa && total > 0 {
		// deficit = share of the tokens so far - tokens taken, compared
		// without division: weight/total*(n+1) - taken.
		da := weight[a]*(taken[a]+taken[b]+1) - total*taken[a]
		db := weight[b]*(taken[a]+taken[b]+1) - total*taken[b]
		if da != db {
			return da > db
		}
	}
	return a < b
}

// TokensEnvName is the variable listing a container's tokens of a pool
// ("RAILYARD_TOKENS_RAILYARD_IO_RDMA_VF"), for debugging.
func TokensEnvName(resource string) string {
	return "RAILYARD_TOKENS_" + strings.TrimPrefix(containerdev.EnvName(resource), "PCIDEVICE_")
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
			// A token the pool stopped advertising a moment ago (listed
			// Unhealthy since) is still allocatable: tokens are renumbered
			// when a bind crosses NUMA nodes, and kubelet may have chosen
			// it from the list before. It is a claim on one device like
			// any other; the bind takes a free device of its NUMA node or,
			// when that node is short, of another (binding.choose, with a
			// note). Refusing it would fail the pod's admission for good.
			e, ok := snap.devs[id]
			if !ok {
				return nil, status.Errorf(codes.NotFound, "token %s is not in pool %s", id, p.cfg.Resource)
			}
			if !e.vanishedAt.IsZero() {
				p.cfg.Log.Info("allocating a token renumbered away after kubelet chose it", "resource", p.cfg.Resource, "token", id,
					"since", time.Since(e.vanishedAt).Round(time.Millisecond))
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
