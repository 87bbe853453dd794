package deviceplugin

import (
	"context"
	"slices"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/railyard-io/railyard/internal/alloc"
	"github.com/railyard-io/railyard/internal/containerdev"
	"github.com/railyard-io/railyard/internal/topology"
)

// rpcServer implements the kubelet DevicePlugin service for a Plugin.
type rpcServer struct {
	pluginapi.UnimplementedDevicePluginServer
	p *Plugin
}

var _ pluginapi.DevicePluginServer = (*rpcServer)(nil)

func (s *rpcServer) GetDevicePluginOptions(context.Context, *pluginapi.Empty) (*pluginapi.DevicePluginOptions, error) {
	return s.p.options(), nil
}

// ListAndWatch sends the device list, then every changed list, until the
// stream ends.
func (s *rpcServer) ListAndWatch(_ *pluginapi.Empty, stream grpc.ServerStreamingServer[pluginapi.ListAndWatchResponse]) error {
	ctx := stream.Context()
	for {
		snap := s.p.current()
		if err := stream.Send(&pluginapi.ListAndWatchResponse{Devices: snap.list}); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-snap.changed:
		}
	}
}

func (s *rpcServer) GetPreferredAllocation(ctx context.Context, req *pluginapi.PreferredAllocationRequest) (*pluginapi.PreferredAllocationResponse, error) {
	start := time.Now()
	resp, err := s.p.preferred(ctx, req)
	s.p.cfg.Metrics.ObserveRPC(s.p.cfg.Resource, "GetPreferredAllocation", time.Since(start), err)
	return resp, err
}

func (s *rpcServer) Allocate(ctx context.Context, req *pluginapi.AllocateRequest) (*pluginapi.AllocateResponse, error) {
	start := time.Now()
	resp, err := s.p.allocate(ctx, req)
	s.p.cfg.Metrics.ObserveRPC(s.p.cfg.Resource, "Allocate", time.Since(start), err)
	return resp, err
}

func (s *rpcServer) PreStartContainer(ctx context.Context, req *pluginapi.PreStartContainerRequest) (*pluginapi.PreStartContainerResponse, error) {
	start := time.Now()
	resp, err := s.p.preStart(ctx, req)
	s.p.cfg.Metrics.ObserveRPC(s.p.cfg.Resource, "PreStartContainer", time.Since(start), err)
	return resp, err
}

// allocatable returns the advertised entry of device id, or the status
// kubelet gets for a device the pool does not have or that disappeared.
// (Tokens are checked by allocateTokens: one that was renumbered away is
// still allocatable.)
func (p *Plugin) allocatable(snap *snapshot, id string) (*entry, error) {
	e, ok := snap.devs[id]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "device %s is not in pool %s", id, p.cfg.Resource)
	}
	if !e.vanishedAt.IsZero() {
		return nil, status.Errorf(codes.Unavailable, "device %s of pool %s disappeared", id, p.cfg.Resource)
	}
	return e, nil
}

// options are the plugin's options: PreStartContainer only with a binder.
func (p *Plugin) options() *pluginapi.DevicePluginOptions {
	return &pluginapi.DevicePluginOptions{GetPreferredAllocationAvailable: true, PreStartRequired: p.cfg.Binder != nil}
}

// preferred answers GetPreferredAllocation through the pool's policy. It
// never fails a request kubelet could satisfy: when the policy errs, it
// answers with the must-include devices and then the first available ones.
func (p *Plugin) preferred(ctx context.Context, req *pluginapi.PreferredAllocationRequest) (*pluginapi.PreferredAllocationResponse, error) {
	snap := p.current()
	if p.cfg.Binder != nil {
		return p.preferTokens(ctx, snap, req)
	}
	resp := &pluginapi.PreferredAllocationResponse{}
	for _, cr := range req.GetContainerRequests() {
		size := int(cr.GetAllocationSize())
		if size < 0 || size > len(cr.GetAvailableDeviceIDs()) || len(cr.GetMustIncludeDeviceIDs()) > size {
			return nil, status.Errorf(codes.InvalidArgument, "cannot choose %d of %d available devices with %d must-include",
				size, len(cr.GetAvailableDeviceIDs()), len(cr.GetMustIncludeDeviceIDs()))
		}
		areq := alloc.Request{
			Topology:    snap.topo,
			Available:   cr.GetAvailableDeviceIDs(),
			MustInclude: cr.GetMustIncludeDeviceIDs(),
			Size:        size,
		}
		policy := p.cfg.Policy
		why := ""
		if policy.Needs().PodGPUs {
			areq.GPUs, why = p.podGPUs(ctx)
		}
		var chosen []string
		var classOf []string // the devices (NICs for shares) whose class to the GPUs is measured
		decided := policy.Name()
		if p.cfg.Shared {
			chosen, classOf = preferShares(shareRequest{policy: policy, topo: snap.topo, gpus: areq.GPUs,
				available: areq.Available, mustInclude: areq.MustInclude, size: size})
			if policy.Needs().PodGPUs && len(areq.GPUs) == 0 {
				decided = "spread" // shares go to the NICs with the most free shares
			}
			p.cfg.Log.Debug("preferred shares", "resource", p.cfg.Resource, "policy", decided, "devices", chosen)
		} else if snap.topo == nil {
			p.cfg.Log.Warn("no topology yet: choosing in kubelet's order", "resource", p.cfg.Resource)
			chosen, decided = firstN(areq), fallbackOrder
		} else if res, err := policy.Allocate(areq); err != nil {
			p.cfg.Log.Warn("policy failed: choosing in kubelet's order", "resource", p.cfg.Resource, "policy", policy.Name(), "err", err)
			chosen, decided = firstN(areq), fallbackOrder
		} else {
			chosen, decided = res.Devices, res.Policy
			p.cfg.Log.Debug("preferred allocation", "resource", p.cfg.Resource, "policy", policy.Name(), "decided", decided, "devices", chosen, "reasons", res.Reasons)
		}
		if !p.cfg.Shared {
			classOf = chosen
		}
		if decided != policy.Name() {
			p.cfg.Log.Info("policy fell back", "resource", p.cfg.Resource, "policy", policy.Name(), "decided", decided, "podGPUsUnknown", why)
		}
		p.cfg.Metrics.ObservePreferred(p.cfg.Resource, decided, classes(snap.topo, areq.GPUs, classOf))
		resp.ContainerResponses = append(resp.ContainerResponses, &pluginapi.ContainerPreferredAllocationResponse{DeviceIDs: chosen})
	}
	return resp, nil
}

// fallbackOrder labels answers given in kubelet's own order because the
// policy could not decide (no topology yet, or it failed).
const fallbackOrder = "kubelet-order"

// podGPUs asks PodResources for the admitted container's GPUs, for a policy
// that needs them; why says why they are not known.
func (p *Plugin) podGPUs(ctx context.Context) (gpus []string, why string) {
	if p.cfg.GPUs == nil {
		return nil, "no PodResources client"
	}
	fd, err := p.cfg.GPUs.PodGPUs(ctx, p.cfg.Resource)
	switch {
	case err != nil:
		return nil, err.Error()
	case len(fd.GPUs) == 0:
		return nil, fd.Note
	}
	if fd.Note != "" {
		p.cfg.Log.Warn("some pod GPUs unknown", "resource", p.cfg.Resource, "container", fd.Container, "why", fd.Note)
	}
	p.cfg.Log.Debug("pod GPUs", "resource", p.cfg.Resource, "container", fd.Container, "gpus", fd.GPUs)
	return fd.GPUs, ""
}

// firstN is kubelet's own choice: must-include first, then available in order.
func firstN(r alloc.Request) []string {
	out := slices.Clone(r.MustInclude)
	for _, id := range r.Available {
		if len(out) >= r.Size {
			break
		}
		if !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out
}

// classes returns, per chosen device, its best distance class to the pod's
// GPUs (ClassUnknown without GPUs).
func classes(t *topology.Topology, gpus, devices []string) []topology.Class {
	out := make([]topology.Class, len(devices))
	if t == nil || len(gpus) == 0 {
		return out
	}
	for i, d := range devices {
		best := topology.ClassUnknown
		for _, g := range gpus {
			if c := t.Class(g, d); c != topology.ClassUnknown && (best == topology.ClassUnknown || c < best) {
				best = c
			}
		}
		out[i] = best
	}
	return out
}

// allocate builds the container responses: device nodes, env, devinfo, CDI.
func (p *Plugin) allocate(ctx context.Context, req *pluginapi.AllocateRequest) (*pluginapi.AllocateResponse, error) {
	snap := p.current()
	if p.cfg.Binder != nil {
		return p.allocateTokens(snap, req)
	}
	resp := &pluginapi.AllocateResponse{}
	for _, cr := range req.GetContainerRequests() {
		ids := cr.GetDevicesIds()
		if len(ids) == 0 {
			return nil, status.Error(codes.InvalidArgument, "no devices requested")
		}
		devs := make([]Device, 0, len(ids))
		for _, id := range ids {
			e, err := p.allocatable(snap, id)
			if err != nil {
				return nil, err
			}
			devs = append(devs, e.dev)
		}
		car, err := p.containerResponse(ctx, devs)
		if err != nil {
			return nil, err
		}
		resp.ContainerResponses = append(resp.ContainerResponses, car)
		p.cfg.Metrics.ObserveAllocate(p.cfg.Resource, len(devs))
		p.cfg.Log.Info("allocated", "resource", p.cfg.Resource, "devices", ids)
	}
	return resp, nil
}

func (p *Plugin) containerResponse(ctx context.Context, devs []Device) (*pluginapi.ContainerAllocateResponse, error) {
	car := &pluginapi.ContainerAllocateResponse{}
	cds := make([]containerdev.Device, 0, len(devs))
	for _, d := range devs {
		nodes, err := p.deviceNodes(d)
		if err != nil {
			return nil, status.Errorf(codes.FailedPrecondition, "device %s: %v", d.ID, err)
		}
		for _, n := range nodes {
			// A share's NIC's nodes once, however many of its shares.
			if !slices.ContainsFunc(car.Devices, func(o *pluginapi.DeviceSpec) bool { return o.ContainerPath == containerdev.ContainerPath(n) }) {
				car.Devices = append(car.Devices, &pluginapi.DeviceSpec{
					HostPath: containerdev.HostPath(p.cfg.DevRoot, n), ContainerPath: containerdev.ContainerPath(n), Permissions: "rw"})
			}
		}
		cds = append(cds, p.containerDevice(d, nodes))
		if p.cfg.CDIKind != "" {
			car.CdiDevices = append(car.CdiDevices, &pluginapi.CDIDevice{Name: p.cfg.CDIKind + "=" + d.ID})
		}
		if err := p.writeDevInfo(d); err != nil {
			return nil, status.Errorf(codes.Internal, "device %s: %v", d.ID, err)
		}
	}
	// NCCL_IB_HCA here only without rail groups: with them, the merged
	// NCCL configuration names every pool's devices. Allocate's variables
	// are overridable: kubelet puts them before the container's own.
	car.Envs = containerdev.Env(cds, containerdev.EnvOptions{NCCLIBHCA: p.cfg.Groups == nil, NCCL: p.cfg.NCCL, Overridable: true}).Map()
	if p.cfg.Groups == nil {
		return car, nil
	}
	j, err := p.cfg.Groups.Join(ctx, p.cfg.Resource, devs)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "NCCL configuration: %v", err)
	}
	switch {
	case j.Note != "":
		p.cfg.Log.Warn("allocation starts its own NCCL group; a container taking several pools may see only this pool's devices in NCCL_IB_HCA",
			"resource", p.cfg.Resource, "group", j.Group, "why", j.Note)
	case len(j.With) > 0:
		p.cfg.Log.Info("allocation joins the NCCL group of the same container", "resource", p.cfg.Resource, "group", j.Group, "with", j.With, "NCCL_IB_HCA", j.HCAs)
	default:
		p.cfg.Log.Debug("allocation starts an NCCL group", "resource", p.cfg.Resource, "group", j.Group, "NCCL_IB_HCA", j.HCAs)
	}
	car.Envs["NCCL_CONF_FILE"] = NCCLConfPath
	car.Mounts = append(car.Mounts, &pluginapi.Mount{ContainerPath: NCCLConfPath, HostPath: j.ConfHostPath, ReadOnly: true})
	if j.CDIName != "" {
		car.CdiDevices = append(car.CdiDevices, &pluginapi.CDIDevice{Name: j.CDIName})
	}
	return car, nil
}
