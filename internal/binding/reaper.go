package binding

import "time"

// Reaper is the clean-up policy of the agent's binding GC: which bindings
// to release, judged over successive PodResources lists rather than one.
// A token another pod holds is released at once (kubelet gave it away); a
// token held by no pod is released only after it stayed so for Grace
// (AnonymousGrace for a binding of no known pod): right after a kubelet
// restart PodResources lists no pods for a moment, which is no proof they
// ended. The time a binding was first seen unheld is kept per binding
// (token and pod): the same token bound again to another pod starts
// again. A Reaper is not safe for concurrent use; the zero value (Grace 0)
// releases on the second list that shows a token unheld.
type Reaper struct {
	// Grace is how long a token must stay held by no pod.
	Grace  time.Duration
	unheld map[reapKey]time.Time
}

// reapKey is a binding, as the reaper times it.
type reapKey struct {
	token string
	pod   PodRef
}

// Due returns the bindings of bs to release now (token -> the binding's
// pod, for ReleaseIf to check it is still that binding), given the list
// h. Bindings h does not postdate are left alone (the list may predate
// them).
func (r *Reaper) Due(bs []Binding, h Holders) map[string]PodRef {
	if r.unheld == nil {
		r.unheld = map[reapKey]time.Time{}
	}
	out := map[string]PodRef{}
	seen := map[reapKey]bool{}
	for _, bd := range bs {
		if !h.Postdates(bd) {
			continue
		}
		holder, held := h.Pods[bd.Token]
		switch {
		case held && (bd.Pod.Name == "" || holder.Same(bd.Pod)):
			continue
		case held:
			out[bd.Token] = bd.Pod // kubelet gave the token to another pod
			continue
		}
		k := reapKey{bd.Token, bd.Pod}
		seen[k] = true
		first, ok := r.unheld[k]
		if !ok {
			r.unheld[k] = h.At
			continue
		}
		grace := r.Grace
		if bd.Pod.Name == "" {
			grace = AnonymousGrace
		}
		if h.At.Sub(first) >= grace {
			out[bd.Token] = bd.Pod
		}
	}
	for k := range r.unheld {
		if !seen[k] {
			delete(r.unheld, k)
		}
	}
	return out
}

// KubeletRestarted forgets when tokens were first seen unheld: a kubelet
// that just restarted lists no pods for a moment, so each binding's grace
// counts again from after the restart.
func (r *Reaper) KubeletRestarted() { r.unheld = nil }
