package binding

import (
	"context"
	"fmt"
	"slices"
	"time"

	podresourcesapi "k8s.io/kubelet/pkg/apis/podresources/v1"

	"github.com/railyard-io/railyard/internal/podresources"
)

// listTimeout bounds one PodResources List.
const listTimeout = 5 * time.Second

// Binder binds through PodResources: it finds a pod's tokens and GPUs in
// kubelet's List and asks the store to bind them.
type Binder struct {
	Store *Store
	// Lister is kubelet's PodResources; nil dials the socket the view names
	// (railyard-cni, one call per process).
	Lister podresources.Lister
}

func (b *Binder) list(ctx context.Context, v *View) (*podresourcesapi.ListPodResourcesResponse, error) {
	lister := b.Lister
	if lister == nil {
		c, conn, err := podresources.Dial(v.PodResourcesSocket)
		if err != nil {
			return nil, err
		}
		defer conn.Close()
		lister = c
	}
	ctx, cancel := context.WithTimeout(ctx, listTimeout)
	defer cancel()
	resp, err := lister.List(ctx, &podresourcesapi.ListPodResourcesRequest{})
	if err != nil {
		return nil, fmt.Errorf("listing pod resources: %w", err)
	}
	return resp, nil
}

// BindPod binds every token of pod (railyard-cni ADD). ErrPodNotListed
// when PodResources does not list the pod.
func (b *Binder) BindPod(ctx context.Context, pod PodRef, sandbox, by string) (Result, error) {
	v, err := b.Store.View()
	if err != nil {
		return Result{}, err
	}
	at := b.Store.opt.Now()
	resp, err := b.list(ctx, v)
	if err != nil {
		return Result{}, err
	}
	req, ok := PodRequest(resp, v, pod)
	if !ok {
		return Result{}, fmt.Errorf("%w: %s", ErrPodNotListed, pod)
	}
	h := HoldersFrom(resp, v, at)
	req.Sandbox, req.By, req.Holders = sandbox, by, &h
	return b.Store.Bind(ctx, req)
}

// BindTokens binds the pod of the container holding tokens (the device
// plugin's PreStartContainer, which names only the devices). Tokens that
// no listed container holds (a non-restartable init container's) are bound
// for no pod, without GPUs.
func (b *Binder) BindTokens(ctx context.Context, tokens []string, by string) (Result, error) {
	v, err := b.Store.View()
	if err != nil {
		return Result{}, err
	}
	at := b.Store.opt.Now()
	resp, err := b.list(ctx, v)
	if err != nil {
		return Result{}, err
	}
	req, ok := TokensRequest(resp, v, tokens)
	if !ok {
		req = Request{Containers: []ContainerTokens{{Tokens: tokens}}}
	}
	h := HoldersFrom(resp, v, at)
	req.By, req.Holders = by, &h
	return b.Store.Bind(ctx, req)
}

// ErrPodNotListed: PodResources does not list the pod.
var ErrPodNotListed = fmt.Errorf("binding: pod not listed by kubelet's PodResources")

// PodRequest builds the request binding every token of pod from a
// PodResources list: each container's tokens of the view's pools and its
// GPUs (mapped to PCI addresses through the view's GPU map).
func PodRequest(resp *podresourcesapi.ListPodResourcesResponse, v *View, pod PodRef) (Request, bool) {
	for _, p := range resp.GetPodResources() {
		if p.GetNamespace() == pod.Namespace && p.GetName() == pod.Name {
			return podRequest(p, v, pod), true
		}
	}
	return Request{}, false
}

// TokensRequest is PodRequest for the pod whose container holds tokens.
func TokensRequest(resp *podresourcesapi.ListPodResourcesResponse, v *View, tokens []string) (Request, bool) {
	for _, p := range resp.GetPodResources() {
		for _, c := range p.GetContainers() {
			for _, d := range c.GetDevices() {
				for _, id := range d.GetDeviceIds() {
					if slices.Contains(tokens, id) {
						return podRequest(p, v, PodRef{Namespace: p.GetNamespace(), Name: p.GetName()}), true
					}
				}
			}
		}
	}
	return Request{}, false
}

func podRequest(p *podresourcesapi.PodResources, v *View, pod PodRef) Request {
	resolver := podresources.Map(v.GPUMap)
	req := Request{Pod: pod}
	for _, c := range p.GetContainers() {
		ct := ContainerTokens{Name: c.GetName()}
		for _, d := range c.GetDevices() {
			if _, ok := v.PoolByResource(d.GetResourceName()); ok {
				ct.Tokens = append(ct.Tokens, d.GetDeviceIds()...)
				continue
			}
			if slices.Contains(v.GPUResourceNames, d.GetResourceName()) {
				for _, id := range d.GetDeviceIds() {
					if pci, ok := resolver.PCIAddress(id); ok {
						ct.GPUs = append(ct.GPUs, pci)
					}
				}
			}
		}
		slices.Sort(ct.GPUs)
		ct.GPUs = slices.Compact(ct.GPUs)
		if len(ct.Tokens) > 0 || len(ct.GPUs) > 0 {
			req.Containers = append(req.Containers, ct)
		}
	}
	return req
}

// HoldersFrom returns who holds each token of the view's pools in a
// PodResources list taken at at.
func HoldersFrom(resp *podresourcesapi.ListPodResourcesResponse, v *View, at time.Time) Holders {
	h := Holders{At: at, Pods: map[string]PodRef{}}
	for _, p := range resp.GetPodResources() {
		for _, c := range p.GetContainers() {
			for _, d := range c.GetDevices() {
				if _, ok := v.PoolByResource(d.GetResourceName()); !ok {
					continue
				}
				for _, id := range d.GetDeviceIds() {
					h.Pods[id] = PodRef{Namespace: p.GetNamespace(), Name: p.GetName()}
				}
			}
		}
	}
	return h
}
