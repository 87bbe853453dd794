package agent

import (
	"context"
	"fmt"
	"maps"
	"strings"

	"github.com/railyard-io/railyard/internal/binding"
	"github.com/railyard-io/railyard/internal/podresources/podlist"
)

// recoverHeld rebuilds the bindings of tokens kubelet holds that lost
// them (bindings.json removed or lost while their pods run) from their CDI
// specs, and refuses, loudly, the pools of those whose device it cannot
// find: nothing of such a pool is bound (binding.Pool.Refused) while
// kubelet holds those tokens, since any device that looks free may be in
// use. It returns the tokens whose files Reconcile must keep, and false
// when it could not run (then nothing may be removed as a stray).
func (b *lateBinding) recoverHeld(ctx context.Context, pods []podlist.Pod, h binding.Holders) ([]string, bool) {
	rec, err := b.store.Recover(ctx, pods, h)
	if err != nil {
		b.log.Error("recovering the bindings of tokens kubelet holds", "err", err)
		return nil, false
	}
	for _, bd := range rec.Bindings {
		b.log.Warn("binding recovered from its CDI spec: kubelet holds the token but the bindings file had lost it", "resource", bd.Resource,
			"token", bd.Token, "device", bd.Device, "pod", bd.Pod.String(), "container", bd.Container, "dir", b.store.Dir())
	}
	refused := map[string]string{}
	for res, toks := range rec.Unknown {
		refused[res] = fmt.Sprintf("tokens %s are held by running pods but lost their bindings, and their CDI specs do not name their devices: "+
			"until those pods end, any device that looks free may be in use", strings.Join(toks, ", "))
		b.log.Error("pool refused: it binds nothing until the pods holding these tokens end", "resource", res, "tokens", toks, "dir", b.store.Dir())
	}
	b.mu.Lock()
	changed := !maps.Equal(refused, b.refused)
	b.refused = refused
	b.recovered = true
	b.mu.Unlock()
	if changed {
		if err := b.publish(ctx); err != nil {
			b.log.Error("publishing the binding view with the refused pools", "err", err)
		}
	}
	if len(rec.Bindings) > 0 && b.refresh != nil {
		b.refresh()
	}
	return rec.Tokens(), true
}

// ensureRecovered runs recoverHeld once before the first bind when the
// start-up GC could not (PodResources was not readable then): a bind must
// never take a device a running container holds.
func (b *lateBinding) ensureRecovered(ctx context.Context) error {
	b.mu.Lock()
	done := b.recovered
	b.mu.Unlock()
	if done {
		return nil
	}
	_, pods, h, err := b.snapshot(ctx)
	if err != nil {
		return fmt.Errorf("recovering lost bindings before binding: %w", err)
	}
	if _, ok := b.recoverHeld(ctx, pods, h); !ok {
		return fmt.Errorf("recovering lost bindings before binding failed (see the agent's log)")
	}
	return nil
}
