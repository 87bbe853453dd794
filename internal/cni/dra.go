package cni

import (
	"errors"
	"fmt"

	"github.com/containernetworking/cni/pkg/types"
	current "github.com/containernetworking/cni/pkg/types/100"

	"github.com/railyard-io/railyard/internal/binding"
	"github.com/railyard-io/railyard/internal/cni/state"
	"github.com/railyard-io/railyard/internal/draview"
)

// draPool reads the DRA view the agent's DRA kubelet plugin publishes in
// the binding directory and says whether resourceName is one of its
// pools. No view (no DRA pool on the node, or an agent without it) is
// not one; a view that cannot be read is an error, as it cannot tell.
func draPool(s *session) (*draview.View, bool, error) {
	v, err := draview.Read(s.cfg.BindingDir)
	switch {
	case errors.Is(err, draview.ErrNoView):
		return nil, false, nil
	case err != nil:
		// The agent rewrites it at its next start, Prepare or Unprepare.
		return nil, false, withCode(types.ErrTryAgainLater, fmt.Errorf("resourceName %s: %w", s.cfg.ResourceName, err))
	}
	return v, v.HasPool(s.cfg.ResourceName), nil
}

func draPod(pod binding.PodRef) draview.PodRef {
	return draview.PodRef{Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID}
}

// bindDRA points the session at the pod's next device of the DRA pool
// resourceName: the devices of the prepared claims reserved for the pod
// (claims in the view's order, each claim's devices in rail order), the
// first that no other interface of this sandbox holds (a share of a
// shared NIC: a macvlan on it, keyed by its share ID). The kubelet
// prepares a pod's claims before it creates the sandbox, so they are in
// the view at ADD. A pod holding no device of the pool gets nothing
// (errNothingToAttach); a device attached to another sandbox (a claim
// shared by several pods, or an earlier sandbox not deleted yet) is an
// error naming it.
func (p *Plugin) bindDRA(s *session, a Args, pod binding.PodRef, v *draview.View) error {
	held := v.PodDevices(draPod(pod), s.cfg.ResourceName)
	if len(held) == 0 {
		return errNothingToAttach
	}
	for _, h := range held {
		key := h.PCI // a device held whole; a share is keyed by its share ID
		if id := h.ShareID(); id != "" {
			key = id
		}
		rec, err := s.store.Get(key)
		switch {
		case errors.Is(err, state.ErrNoRecord),
			err == nil && rec.ContainerID == a.ContainerID && rec.IfName == a.IfName, // ADD retried
			err == nil && rec.BootID != p.BootID:                                     // left from a previous boot: ADD tears it down
		case err != nil:
			return err
		case rec.ContainerID == a.ContainerID:
			continue // another interface of this sandbox
		default:
			why := "another sandbox holds it until its DEL runs"
			if len(h.Claim.Pods) > 1 {
				why = fmt.Sprintf("the claim is reserved for %d pods; its netdev can be in one pod's network namespace only", len(h.Claim.Pods))
			}
			return withCode(types.ErrTryAgainLater, fmt.Errorf("device %s of claim %s/%s (DRA pool %s) is attached to container %s as %s, not to pod %s's sandbox %s (%s)",
				h.PCI, h.Claim.Namespace, h.Claim.Name, s.cfg.ResourceName, rec.ContainerID, rec.IfName, pod, a.ContainerID, why))
		}
		s.cfg.DeviceID = h.PCI
		if id := h.ShareID(); id != "" {
			// A share of a shared NIC: a macvlan on the NIC, as for the
			// device plugin's shares (share.go).
			if s.cfg.RDMA {
				return invalidf("rdma: %s is a share of a shared NIC (claim %s/%s): its RDMA device stays in the host namespace for every pod sharing it (the RDMA subsystem in shared netns mode); remove rdma/rdmaIsolation", id, h.Claim.Namespace, h.Claim.Name)
			}
			s.cfg.Share = id
		}
		s.key = deviceKey(s.fs, s.cfg)
		s.dra = &h
		return nil
	}
	return withCode(types.ErrTryAgainLater, fmt.Errorf("every device of DRA pool %s in pod %s's claims (%d) is attached to this sandbox already: list the network once per device", s.cfg.ResourceName, pod, len(held)))
}

// writeDRAStatus records what ADD did with a claimed device (its
// interface, MAC and IPs in the pod) for the agent, which writes it into
// the claim's status.devices (networkData). The attachment stands without
// it: a failure is a warning.
func (p *Plugin) writeDRAStatus(s *session, a Args, res *current.Result) {
	st := draview.DeviceStatus{ClaimUID: s.dra.Claim.UID, PCI: s.dra.PCI, ContainerID: a.ContainerID, IfName: a.IfName}
	for _, i := range res.Interfaces {
		if i.Name == a.IfName && i.Sandbox != "" {
			st.MAC = i.Mac
		}
	}
	for _, ip := range res.IPs {
		st.IPs = append(st.IPs, ip.Address.String())
	}
	if err := draview.WriteStatus(s.cfg.BindingDir, st); err != nil {
		p.warn("the claim's device status is not recorded: its networkData stays unset", "claim", s.dra.Claim.Namespace+"/"+s.dra.Claim.Name, "device", s.dra.PCI, "err", err)
	}
}

// removeDRAStatus removes the status record of an attachment DEL
// released, only from a binding directory that holds the agent's DRA
// view (a DEL's configuration may be anything).
func (p *Plugin) removeDRAStatus(s *session, a Args) {
	if !lateBinding(s) || s.cfg.BindingDir == "" {
		return
	}
	if _, err := draview.Read(s.cfg.BindingDir); err != nil {
		return
	}
	if err := draview.RemoveStatus(s.cfg.BindingDir, a.ContainerID, a.IfName); err != nil {
		p.warn("the claim's device status record is not removed", "container", a.ContainerID, "ifname", a.IfName, "err", err)
	}
}
