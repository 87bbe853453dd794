package cni

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/containernetworking/cni/pkg/types"

	"github.com/railyard-io/railyard/internal/binding"
	"github.com/railyard-io/railyard/internal/cni/state"
	"github.com/railyard-io/railyard/internal/pciaddr"
	"github.com/railyard-io/railyard/internal/podresources/podlist"
)

// lateBinding reports whether the configuration names a late-binding
// token (Multus passes it as deviceID) or, with no device at all, a pool
// by resourceName (a sandbox pool's bound device, or the device kubelet
// allocated from any other pool: see bind).
func lateBinding(s *session) bool {
	return s.cfg.Token != "" || (s.cfg.DeviceID == "" && s.cfg.Device == "" && s.cfg.ResourceName != "")
}

// podArgs reads the pod's identity from CNI_ARGS
// ("IgnoreUnknown=1;K8S_POD_NAMESPACE=ml;K8S_POD_NAME=trainer;K8S_POD_UID=...").
func podArgs(cniArgs string) (binding.PodRef, bool) {
	var p binding.PodRef
	for _, kv := range strings.Split(cniArgs, ";") {
		k, v, _ := strings.Cut(kv, "=")
		switch strings.TrimSpace(k) {
		case "K8S_POD_NAMESPACE":
			p.Namespace = v
		case "K8S_POD_NAME":
			p.Name = v
		case "K8S_POD_UID":
			p.UID = v
		}
	}
	return p, p.Namespace != "" && p.Name != ""
}

// bind binds the pod's tokens (all of them, across pools, near its GPUs)
// and points the session at the device bound to this network's token, or
// at the pod's first device of resourceName not attached elsewhere. The
// binding is idempotent, so the runtime's retry of a failed ADD gets the
// same device. resourceName picks one of three sources: a DRA pool (the
// agent's DRA view: the pod's prepared claims), a sandbox pool (the
// binding view: bind the pod's tokens), else kubelet's PodResources.
func (p *Plugin) bind(ctx context.Context, s *session, a Args) error {
	pod, ok := podArgs(a.PluginArgs)
	if !ok {
		return withCode(types.ErrInvalidEnvironmentVariables,
			fmt.Errorf("late binding needs the pod: CNI_ARGS has no K8S_POD_NAMESPACE and K8S_POD_NAME (%q)", a.PluginArgs))
	}
	if s.cfg.Token == "" {
		dv, isDRA, err := draPool(s)
		if err != nil {
			return err
		}
		if isDRA {
			return p.bindDRA(s, a, pod, dv)
		}
	}
	store := binding.NewStore(s.cfg.BindingDir, binding.Options{LockTimeout: s.cfg.LockTimeout})
	v, verr := store.View()
	if s.cfg.Token == "" && (verr != nil || !hasPool(v, binding.PoolTag(s.cfg.ResourceName))) {
		// Not a sandbox pool of this node (or no view published): the
		// device kubelet allocated to the pod from resourceName.
		dev, err := p.allocated(ctx, s, a, pod, podResourcesSocket(s, v)) // v is nil without a view
		if err != nil {
			return err
		}
		s.cfg.DeviceID = dev
		s.key = deviceKey(s.fs, s.cfg)
		return nil
	}
	if verr == nil {
		// A token of no pool of this node is a configuration error, not a
		// reason to bind the pod's other tokens.
		if id, err := binding.ParseToken(s.cfg.Token); s.cfg.Token != "" && (err != nil || !hasPool(v, id.Tag)) {
			return invalidf("deviceID: %w: %s", binding.ErrUnknownToken, s.cfg.Token)
		}
	}
	res, err := (&binding.Binder{Store: store, Lister: p.PodResources}).BindPod(ctx, pod, a.ContainerID, binding.ByCNI)
	switch {
	case errors.Is(err, binding.ErrUnknownToken):
		return invalidf("deviceID: %w", err)
	case err != nil:
		// No view yet (agent starting), PodResources unreachable, the
		// store locked: the runtime retries the sandbox.
		return withCode(types.ErrTryAgainLater, fmt.Errorf("late binding for pod %s: %w", pod, err))
	}
	var dev string
	if s.cfg.Token != "" {
		d, ok := res.Device(s.cfg.Token)
		if !ok {
			return withCode(types.ErrTryAgainLater, fmt.Errorf("token %s is not held by pod %s in kubelet's PodResources", s.cfg.Token, pod))
		}
		dev = d
	} else {
		dev, err = pickByResource(s, a, res, pod)
		if err != nil {
			return err
		}
	}
	s.cfg.DeviceID = dev
	s.key = deviceKey(s.fs, s.cfg)
	return nil
}

// pickByResource returns the first device (by token) of the pod's
// bindings of resourceName that no other attachment of this sandbox holds.
func pickByResource(s *session, a Args, res binding.Result, pod binding.PodRef) (string, error) {
	var mine []binding.Binding
	for _, b := range res.Bindings {
		if b.Resource == s.cfg.ResourceName {
			mine = append(mine, b)
		}
	}
	slices.SortFunc(mine, func(x, y binding.Binding) int { return strings.Compare(x.Token, y.Token) })
	for _, b := range mine {
		rec, err := s.store.Get(b.Device)
		if errors.Is(err, state.ErrNoRecord) || (err == nil && rec.ContainerID == a.ContainerID && rec.IfName == a.IfName) {
			return b.Device, nil
		}
	}
	if len(mine) == 0 {
		return "", errNothingToAttach // BindPod found the pod listed
	}
	return "", withCode(types.ErrTryAgainLater, fmt.Errorf("every device bound to pod %s from %s is attached already", pod, s.cfg.ResourceName))
}

// errNothingToAttach: the pod, listed by kubelet's PodResources, holds no
// device (or token) of the network's resourceName. Without Multus every
// pod of the node gets the network, so ADD then attaches nothing and
// succeeds.
var errNothingToAttach = errors.New("the pod holds no device of the network's resourceName")

// podResourcesSocket is the socket the agent's published view names (v;
// nil when none is published), else the configuration's.
func podResourcesSocket(s *session, v *binding.View) string {
	if v != nil && v.PodResourcesSocket != "" {
		return v.PodResourcesSocket
	}
	return s.cfg.PodResourcesSocket
}

// podDeviceIDs lists the pod's device IDs of resourceName, in container
// order; listed is false when PodResources does not list the pod.
func (p *Plugin) podDeviceIDs(ctx context.Context, s *session, pod binding.PodRef, socket string) (ids []string, listed bool, err error) {
	lister := p.PodResources
	if lister == nil {
		c := podlist.New(socket)
		defer c.Close()
		lister = c
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	pods, err := lister.List(ctx)
	if err != nil {
		return nil, false, fmt.Errorf("listing kubelet's PodResources at %s: %w", socket, err)
	}
	for _, pd := range pods {
		if pd.Namespace != pod.Namespace || pd.Name != pod.Name {
			continue
		}
		listed = true
		for _, c := range pd.Containers {
			for _, d := range c.Devices {
				if d.Resource == s.cfg.ResourceName {
					ids = append(ids, d.IDs...)
				}
			}
		}
	}
	return ids, listed, nil
}

// allocated returns the first device kubelet allocated to pod from
// resourceName (PodResources, containers in order) that no other
// attachment of this sandbox holds: resourceName without Multus for a
// pool without late binding. Token IDs mean a sandbox pool whose view the
// agent has not published yet: try again later.
func (p *Plugin) allocated(ctx context.Context, s *session, a Args, pod binding.PodRef, socket string) (string, error) {
	ids, listed, err := p.podDeviceIDs(ctx, s, pod, socket)
	switch {
	case err != nil:
		return "", withCode(types.ErrTryAgainLater, fmt.Errorf("resourceName %s: %w", s.cfg.ResourceName, err))
	case !listed:
		return "", withCode(types.ErrTryAgainLater, fmt.Errorf("%w: %s", binding.ErrPodNotListed, pod))
	case len(ids) == 0:
		return "", errNothingToAttach
	}
	for _, id := range ids {
		if _, err := binding.ParseToken(id); err == nil {
			return "", withCode(types.ErrTryAgainLater, fmt.Errorf("pod %s holds late-binding tokens of %s but railyard-agent has published no binding view in %s yet", pod, s.cfg.ResourceName, s.cfg.BindingDir))
		}
		if _, ok := pciaddr.ParseCanonical(id); !ok {
			return "", invalidf("resourceName: %s hands out %q, not a PCI address: name the device with deviceID (Multus passes it)", s.cfg.ResourceName, id)
		}
		rec, err := s.store.Get(id)
		if errors.Is(err, state.ErrNoRecord) || (err == nil && rec.ContainerID == a.ContainerID && rec.IfName == a.IfName) {
			return id, nil
		}
	}
	return "", withCode(types.ErrTryAgainLater, fmt.Errorf("every device of %s allocated to pod %s is attached already", s.cfg.ResourceName, pod))
}

// holdsNothing says whether the pod of a resourceName network holds no
// device of it (CHECK of an ADD that attached nothing): no device of a
// DRA pool in its prepared claims, or none of resourceName in kubelet's
// PodResources.
func (p *Plugin) holdsNothing(ctx context.Context, s *session, a Args) bool {
	pod, ok := podArgs(a.PluginArgs)
	if !ok || !lateBinding(s) || s.cfg.Token != "" {
		return false
	}
	if dv, isDRA, err := draPool(s); err != nil {
		return false
	} else if isDRA {
		return len(dv.PodDevices(draPod(pod), s.cfg.ResourceName)) == 0
	}
	v, _ := binding.NewStore(s.cfg.BindingDir, binding.Options{LockTimeout: s.cfg.LockTimeout}).View()
	ids, listed, err := p.podDeviceIDs(ctx, s, pod, podResourcesSocket(s, v))
	return err == nil && listed && len(ids) == 0
}

// releaseBinding releases what this sandbox bound (DEL). It never fails
// DEL: the agent's GC releases what a failed release leaves.
func (p *Plugin) releaseBinding(ctx context.Context, s *session, a Args) {
	if !lateBinding(s) {
		return
	}
	if s.cfg.Token == "" {
		// resourceName: only a sandbox pool of the published view bound
		// anything.
		v, err := binding.NewStore(s.cfg.BindingDir, binding.Options{LockTimeout: s.cfg.LockTimeout}).View()
		if err != nil || !hasPool(v, binding.PoolTag(s.cfg.ResourceName)) {
			return
		}
	}
	pod, ok := podArgs(a.PluginArgs)
	if !ok {
		return
	}
	// Another network of this sandbox still holds a device (its DEL comes
	// next): the last DEL releases the sandbox's bindings.
	if recs, err := s.store.List(); err != nil {
		return
	} else if slices.ContainsFunc(recs, func(r *state.Record) bool { return r.ContainerID == a.ContainerID }) {
		return
	}
	store := binding.NewStore(s.cfg.BindingDir, binding.Options{LockTimeout: s.cfg.LockTimeout})
	_, _ = store.ReleaseSandbox(ctx, pod, a.ContainerID)
}

func hasPool(v *binding.View, tag string) bool {
	_, ok := v.Pool(tag)
	return ok
}
