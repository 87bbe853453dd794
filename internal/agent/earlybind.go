package agent

import (
	"context"
	"slices"
	"time"

	"github.com/railyard-io/railyard/internal/binding"
)

// Early binding takes the bind off the pod's start path. Kubelet admits a
// pod by allocating every device of every container (our Allocate among
// them), then creates the sandbox (pause image, network namespace, CNI)
// and only then calls PreStartContainer and creates the container. From
// the moment PodResources lists a container with its tokens and its GPUs,
// the bind has everything it needs (binding.GPUsKnown), so the agent binds
// right then, while kubelet creates the sandbox, and PreStartContainer
// finds the tokens bound by a list taken after their Allocate and returns
// without listing (boundEarly). What the early binder cannot decide (a
// container listed without GPUs, which may still be waiting for them) is
// left to PreStartContainer after earlyFor, as before.
const (
	// earlyPoll is how often PodResources is listed while Allocate's
	// tokens wait: kubelet records a container's next resource one
	// plugin round trip after the previous one.
	earlyPoll = 5 * time.Millisecond
	// earlySlowPoll is the interval once the youngest waiting tokens are
	// older than earlySlowAfter.
	earlySlowPoll  = 50 * time.Millisecond
	earlySlowAfter = 100 * time.Millisecond
	// defaultEarlyFor is how long tokens wait for an early bind before it
	// is left to PreStartContainer (lateBinding.earlyFor).
	defaultEarlyFor = 2 * time.Second
)

// allocatedTokensLocked records an Allocate's tokens for the early binder
// and wakes it. Called with b.mu held.
func (b *lateBinding) allocatedTokensLocked(tokens []string, at time.Time) {
	for _, t := range tokens {
		b.allocatedAt[t] = at
		delete(b.boundAfter, t)
	}
	select {
	case b.wake <- struct{}{}:
	default:
	}
}

// waitingLocked reports whether token t waits for an early bind: kubelet
// allocated it within earlyFor and no early bind followed (older tokens
// are left to PreStartContainer). Called with b.mu held.
func (b *lateBinding) waitingLocked(t string, now time.Time) (since time.Time, ok bool) {
	at, allocated := b.allocatedAt[t]
	if !allocated || now.Sub(at) > b.earlyFor || b.boundAfter[t].After(at) {
		return time.Time{}, false
	}
	return at, true
}

// runEarly is the early binder: it lists PodResources while tokens wait
// and binds every pod whose waiting tokens are listed with what their
// policies need. It returns when ctx ends.
func (b *lateBinding) runEarly(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-b.wake:
		}
		for {
			wait, ok := b.nextPoll()
			if !ok {
				break
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(wait):
			}
			b.bindWaiting(ctx)
		}
	}
}

// nextPoll is the time to the next list, false when nothing waits.
func (b *lateBinding) nextPoll() (time.Duration, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := time.Now()
	var youngest time.Duration = -1
	for t := range b.allocatedAt {
		if at, ok := b.waitingLocked(t, now); ok && (youngest < 0 || now.Sub(at) < youngest) {
			youngest = now.Sub(at)
		}
	}
	switch {
	case youngest < 0:
		return 0, false
	case youngest < earlySlowAfter:
		return earlyPoll, true
	default:
		return earlySlowPoll, true
	}
}

// bindWaiting lists PodResources once and binds the pods of waiting
// tokens that the list shows with everything their policies need.
func (b *lateBinding) bindWaiting(ctx context.Context) {
	if err := b.ensureRecovered(ctx); err != nil {
		b.log.Debug("early binding waits", "err", err)
		return
	}
	v, pods, h, err := b.snapshot(ctx)
	if err != nil {
		b.log.Debug("early binding waits", "err", err)
		return
	}
	at := h.At
	listed := time.Since(at)
	b.mu.Lock()
	var waiting []string
	for t := range b.allocatedAt {
		if since, ok := b.waitingLocked(t, at); ok && since.Before(at) { // Allocate returned before the list was taken
			waiting = append(waiting, t)
		}
	}
	b.mu.Unlock()
	slices.Sort(waiting)
	done := map[string]bool{}
	for _, t := range waiting {
		if done[t] {
			continue
		}
		req, ok := binding.TokensRequest(pods, v, []string{t})
		if !ok || !binding.GPUsKnown(req, v) {
			continue
		}
		req.By, req.Holders = binding.ByAgent, &h
		var toks []string
		for _, c := range req.Containers {
			toks = append(toks, c.Tokens...)
		}
		for _, tok := range toks {
			done[tok] = true
		}
		finish := b.startEarly(toks)
		start := time.Now()
		res, err := b.store.Bind(ctx, req)
		took := listed + time.Since(start)
		b.m.observeBind("early", took, err)
		if err != nil {
			finish(time.Time{})
			b.log.Warn("early binding failed: PreStartContainer binds", "pod", req.Pod.String(), "tokens", toks, "err", err)
			continue
		}
		finish(at)
		b.logBound(res, "early", took, listed)
		b.afterBind(res)
	}
}

// startEarly marks tokens as being bound early, before the store commits
// anything a PreStartContainer could see: boundEarly waits for the bind
// instead of finding it committed but not yet recorded and binding again.
// The returned finish records the list time the bind was made from (zero:
// it failed) and ends the mark, in one step under b.mu.
func (b *lateBinding) startEarly(toks []string) (finish func(listedAt time.Time)) {
	ch := make(chan struct{})
	b.mu.Lock()
	for _, t := range toks {
		b.inFlight[t] = ch
	}
	b.mu.Unlock()
	return func(listedAt time.Time) {
		b.mu.Lock()
		for _, t := range toks {
			if a, ok := b.allocatedAt[t]; !listedAt.IsZero() && (!ok || a.Before(listedAt)) {
				b.boundAfter[t] = listedAt
			}
			if b.inFlight[t] == ch {
				delete(b.inFlight, t)
			}
		}
		b.mu.Unlock()
		close(ch)
	}
}

// boundEarly reports whether every token was bound from a PodResources
// list taken after kubelet's latest Allocate of it, and is still bound:
// then the binding is the current holder's, and PreStartContainer need
// not list. It first waits for early binds of the tokens under way.
func (b *lateBinding) boundEarly(ctx context.Context, tokens []string) bool {
	if len(tokens) == 0 {
		return false
	}
	b.mu.Lock()
	for i := 0; i < len(tokens); i++ {
		// An early bind of the token is under way: its outcome decides.
		if ch, ok := b.inFlight[tokens[i]]; ok {
			b.mu.Unlock()
			select {
			case <-ch:
			case <-ctx.Done():
				return false
			}
			b.mu.Lock()
			i = -1
		}
	}
	for _, t := range tokens {
		after, ok := b.boundAfter[t]
		if a, allocated := b.allocatedAt[t]; !ok || !allocated || !after.After(a) {
			b.mu.Unlock()
			return false
		}
	}
	b.mu.Unlock()
	bs, err := b.store.Bindings()
	if err != nil {
		return false
	}
	for _, t := range tokens {
		if !slices.ContainsFunc(bs, func(bd binding.Binding) bool { return bd.Token == t }) {
			return false
		}
	}
	return true
}
