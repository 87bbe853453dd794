package binding

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/railyard-io/railyard/internal/alloc"
	"github.com/railyard-io/railyard/internal/pciaddr"
	"github.com/railyard-io/railyard/internal/podresources/podlist"
)

// listTimeout bounds one PodResources List.
const listTimeout = 5 * time.Second

// Binder binds through PodResources: it finds a pod's tokens and GPUs in
// kubelet's List and asks the store to bind them.
type Binder struct {
	Store *Store
	// Lister is kubelet's PodResources; nil dials the socket the view
	// names (railyard-cni, one call per process).
	Lister podlist.Lister
}

func (b *Binder) list(ctx context.Context, v *View) ([]podlist.Pod, error) {
	lister := b.Lister
	if lister == nil {
		c := podlist.New(v.PodResourcesSocket)
		defer c.Close()
		lister = c
	}
	ctx, cancel := context.WithTimeout(ctx, listTimeout)
	defer cancel()
	pods, err := lister.List(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing pod resources: %w", err)
	}
	return pods, nil
}

// BindPod binds every token of pod (railyard-cni ADD). ErrPodNotListed
// when PodResources does not list the pod. Bindings of pods the list
// shows ended are released in the same change.
func (b *Binder) BindPod(ctx context.Context, pod PodRef, sandbox, by string) (Result, error) {
	began := time.Now()
	v, pods, h, err := b.listed(ctx)
	if err != nil {
		return Result{}, err
	}
	req, ok := PodRequest(pods, v, pod)
	if !ok {
		return Result{}, fmt.Errorf("%w: %s", ErrPodNotListed, pod)
	}
	req.Sandbox, req.By, req.Holders = sandbox, by, &h
	listed := time.Since(began)
	res, err := b.Store.Bind(ctx, req)
	res.Took.List = listed
	return res, err
}

// BindTokens binds the pod of the container holding tokens (the device
// plugin's PreStartContainer, which names only the devices). Tokens that
// no listed container holds (a non-restartable init container's) are bound
// for no pod, without GPUs.
func (b *Binder) BindTokens(ctx context.Context, tokens []string, by string) (Result, error) {
	began := time.Now()
	v, pods, h, err := b.listed(ctx)
	if err != nil {
		return Result{}, err
	}
	req, ok := TokensRequest(pods, v, tokens)
	if !ok {
		req = Request{Containers: []ContainerTokens{{Tokens: tokens}}}
	}
	req.By, req.Holders = by, &h
	listed := time.Since(began)
	res, err := b.Store.Bind(ctx, req)
	res.Took.List = listed
	return res, err
}

// listed reads the view and lists the pods, with who holds which token
// now: what every bind starts from.
func (b *Binder) listed(ctx context.Context) (*View, []podlist.Pod, Holders, error) {
	v, err := b.Store.View()
	if err != nil {
		return nil, nil, Holders{}, err
	}
	at, boot := b.Store.Now()
	pods, err := b.list(ctx, v)
	if err != nil {
		return nil, nil, Holders{}, err
	}
	h := HoldersFrom(pods, v, at)
	h.Boot = boot
	return v, pods, h, nil
}

// ErrPodNotListed: PodResources does not list the pod.
var ErrPodNotListed = errors.New("binding: pod not listed by kubelet's PodResources")

// PodRequest builds the request binding every token of pod from a
// PodResources list: each container's tokens of the view's pools and its
// GPUs (mapped to PCI addresses through the view's GPU map).
func PodRequest(pods []podlist.Pod, v *View, pod PodRef) (Request, bool) {
	for _, p := range pods {
		if p.Namespace == pod.Namespace && p.Name == pod.Name {
			return podRequest(p, v, pod), true
		}
	}
	return Request{}, false
}

// TokensRequest is PodRequest for the pod whose container holds tokens.
func TokensRequest(pods []podlist.Pod, v *View, tokens []string) (Request, bool) {
	for _, p := range pods {
		for _, c := range p.Containers {
			for _, d := range c.Devices {
				for _, id := range d.IDs {
					if slices.Contains(tokens, id) {
						return podRequest(p, v, PodRef{Namespace: p.Namespace, Name: p.Name}), true
					}
				}
			}
		}
	}
	return Request{}, false
}

func podRequest(p podlist.Pod, v *View, pod PodRef) Request {
	req := Request{Pod: pod}
	for _, c := range p.Containers {
		ct := ContainerTokens{Name: c.Name}
		for _, d := range c.Devices {
			if _, ok := v.PoolByResource(d.Resource); ok {
				ct.Tokens = append(ct.Tokens, d.IDs...)
				continue
			}
			if slices.Contains(v.GPUResourceNames, d.Resource) {
				for _, id := range d.IDs {
					if pci, ok := v.gpuPCI(id); ok {
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

// gpuPCI maps a GPU device ID to its PCI address: the view's GPU map
// (NVIDIA UUIDs), or the ID itself when it is a PCI address (amd.com/gpu).
func (v *View) gpuPCI(id string) (string, bool) {
	if pci, ok := v.GPUMap[id]; ok {
		return pci, true
	}
	pci, err := pciaddr.Normalize(strings.TrimSpace(id))
	return pci, err == nil
}

// HoldersFrom returns who holds each token of the view's pools in a
// PodResources list taken at at.
func HoldersFrom(pods []podlist.Pod, v *View, at time.Time) Holders {
	h := Holders{At: at, Pods: map[string]PodRef{}}
	for _, p := range pods {
		for _, c := range p.Containers {
			for _, d := range c.Devices {
				if _, ok := v.PoolByResource(d.Resource); !ok {
					continue
				}
				for _, id := range d.IDs {
					h.Pods[id] = PodRef{Namespace: p.Namespace, Name: p.Name}
				}
			}
		}
	}
	return h
}

// GPUsKnown reports whether req, read from PodResources while kubelet may
// still be allocating the pod's devices, says everything its policies
// need: every container holding tokens of a pool whose policy places by
// the pod's GPUs (alloc.Needs) lists GPUs. Kubelet's device manager
// allocates a container's resources one after the other, in random order
// (it ranges over a map), and records each resource with all its devices
// when its plugin's Allocate returns (devicemanager's podDevices.insert,
// kubelet v1.35), so a container listed with GPUs has all of them, while
// one listed with tokens and no GPUs may be waiting for its GPUs or have
// none: only PreStartContainer or the sandbox's CNI ADD, after admission,
// can tell. A token of no pool of v makes it false.
func GPUsKnown(req Request, v *View) bool {
	for _, c := range req.Containers {
		if len(c.Tokens) == 0 || len(c.GPUs) > 0 {
			continue
		}
		for _, t := range c.Tokens {
			id, err := ParseToken(t)
			if err != nil {
				return false
			}
			p, ok := v.Pool(id.Tag)
			if !ok {
				return false
			}
			pol, err := alloc.ByName(p.Policy)
			if err != nil || pol.Needs().PodGPUs {
				return false
			}
		}
	}
	return len(req.Containers) > 0
}
