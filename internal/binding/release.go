package binding

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Release reasons, for logs and metrics.
const (
	ReasonCNIDel     = "cni-del"    // railyard-cni DEL of the sandbox that bound it
	ReasonPodGone    = "pod-gone"   // PodResources no longer lists the token with its pod
	ReasonReassigned = "reassigned" // kubelet gave the token to another pod
)

// release removes the bindings pick selects: their files first, then the
// commit. It returns the released bindings.
func (s *Store) release(ctx context.Context, pick func(Binding) bool) ([]Binding, error) {
	unlock, err := s.lock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	cur, err := s.Bindings()
	if err != nil {
		return nil, err
	}
	var keep, gone []Binding
	for _, b := range cur {
		if pick(b) {
			gone = append(gone, b)
		} else {
			keep = append(keep, b)
		}
	}
	if len(gone) == 0 {
		return nil, nil
	}
	v, err := s.View()
	if err != nil && !errors.Is(err, ErrNoView) {
		return nil, err
	}
	for _, b := range gone {
		if err := s.removeFiles(v, b); err != nil {
			return nil, err
		}
	}
	if keep == nil {
		keep = []Binding{}
	}
	if err := s.writeBindings(keep); err != nil {
		return nil, err
	}
	return gone, nil
}

// ReleaseSandbox releases the pod's bindings that sandbox bound or last
// confirmed (railyard-cni DEL). A binding another sandbox of the pod
// confirmed since is kept.
func (s *Store) ReleaseSandbox(ctx context.Context, pod PodRef, sandbox string) ([]Binding, error) {
	if sandbox == "" {
		return nil, nil
	}
	return s.release(ctx, func(b Binding) bool { return b.Sandbox == sandbox && b.Pod.Same(pod) })
}

// Holders is who holds each token according to kubelet's PodResources,
// read at At (before any binding that the snapshot may not show).
type Holders struct {
	// At is when the list was asked for, on the wall clock; Boot on the
	// boot's clock (zero: unknown), which orders it against bindings
	// (Postdates).
	At   time.Time
	Boot BootTime
	// Pods maps a token to the pod whose container holds it.
	Pods map[string]PodRef
}

// ReleaseGone releases the bindings kubelet no longer backs: the token is
// held by another pod, or by none. Bindings made after h.At are kept (the
// snapshot may predate them), and bindings of no known pod (tokens of a
// non-restartable init container, which PodResources does not list) are
// kept for anonGrace after they were made.
func (s *Store) ReleaseGone(ctx context.Context, h Holders, anonGrace time.Duration) ([]Binding, error) {
	return s.release(ctx, func(b Binding) bool { return h.gone(b, anonGrace) })
}

// ReleaseIf releases the bindings pick selects (the agent's GC, which
// decides with more than one PodResources list).
func (s *Store) ReleaseIf(ctx context.Context, pick func(Binding) bool) ([]Binding, error) {
	return s.release(ctx, pick)
}

// reassigned reports whether b's token is held by another pod than b's.
func (h *Holders) reassigned(b Binding) bool {
	if !h.Postdates(b) || b.Pod.Name == "" {
		return false
	}
	holder, held := h.Pods[b.Token]
	return held && !holder.Same(b.Pod)
}

// AnonymousGrace is how long a binding of no known pod is kept when no
// listed container holds its token.
const AnonymousGrace = 10 * time.Minute

// gone reports whether kubelet no longer backs b (see ReleaseGone).
func (h *Holders) gone(b Binding, anonGrace time.Duration) bool {
	age, before := h.age(b)
	if !before {
		return false
	}
	holder, held := h.Pods[b.Token]
	switch {
	case held && b.Pod.Name == "":
		return false // an init container's token went to a listed container: its bind takes it over
	case held:
		return !holder.Same(b.Pod)
	case b.Pod.Name == "":
		return age > anonGrace
	default:
		return true
	}
}

// Reconcile makes the files agree with the bindings: every binding's CDI
// spec and device-info file written, every per-token spec and device-info
// file without a binding removed, stray temporary files removed. The agent
// runs it at start and with every GC; it heals a process that died
// between committing a change and writing its files. The files of the
// tokens in keep stay though unbound (Recover's Unknown: a running
// container's spec is the only record of its device).
func (s *Store) Reconcile(ctx context.Context, keep ...string) error {
	unlock, err := s.lock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	v, err := s.View()
	if err != nil {
		return err
	}
	cur, err := s.Bindings()
	if err != nil {
		return err
	}
	if err := s.writeFiles(v, cur, cur); err != nil {
		return err
	}
	bound := map[string]bool{}
	for _, b := range cur {
		bound[b.Token] = true
	}
	for _, t := range keep {
		bound[t] = true
	}
	var stray []string
	if v.CDISpecDir != "" {
		specs, _ := filepath.Glob(filepath.Join(v.CDISpecDir, cdiSpecPrefix+"*.json"))
		for _, p := range specs {
			tok := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(p), cdiSpecPrefix), ".json")
			if !bound[tok] {
				stray = append(stray, p)
			}
		}
	}
	if v.DevInfoDir != "" {
		for _, p := range v.Pools {
			prefix := strings.ReplaceAll(p.Resource, "/", "-") + "-" + tokenPrefix + p.Tag + "-"
			files, _ := filepath.Glob(filepath.Join(v.DevInfoDir, prefix+"*-device.json"))
			for _, f := range files {
				tok := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(f), strings.ReplaceAll(p.Resource, "/", "-")+"-"), "-device.json")
				if !bound[tok] {
					stray = append(stray, f)
				}
			}
		}
	}
	for _, dir := range []string{s.dir, v.CDISpecDir, v.DevInfoDir} {
		if dir == "" {
			continue
		}
		tmps, _ := filepath.Glob(filepath.Join(dir, tempPrefix+"*"+tempSuffix))
		stray = append(stray, tmps...)
	}
	if len(stray) == 0 {
		return nil
	}
	if err := s.fault(StepRemoveStrays); err != nil {
		return err
	}
	var errs []error
	for _, p := range stray {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
