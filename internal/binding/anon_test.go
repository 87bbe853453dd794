package binding

import (
	"context"
	"testing"
	"time"
)

// TestBindTokensOfAnUnlistedContainer: PreStartContainer for tokens no
// listed container holds (a non-restartable init container's, which
// PodResources does not list) binds them for no pod, without GPUs; GC keeps
// such a binding for AnonymousGrace, then releases it; a listed pod that
// now holds the token takes it over at its bind.
func TestBindTokensOfAnUnlistedContainer(t *testing.T) {
	v, tp := testView(t, "dgx-h100", 1)
	now := time.Unix(1e9, 0)
	s := newTestStore(t, v, Options{Now: func() time.Time { return now }})
	ctx := context.Background()
	tok := freeTokens(t, s, v, tp.GPUs[0].NUMA, 1, map[string]bool{})
	lis := &fakeLister{}
	lis.set(podRes("ns", "other", []string{tp.GPUs[5].PCI}, nil))
	res, err := (&Binder{Store: s, Lister: lis}).BindTokens(ctx, tok, ByAgent)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Bindings) != 1 || res.Bindings[0].Pod.Name != "" || len(res.Bindings[0].GPUs) != 0 {
		t.Fatalf("bindings %+v", res.Bindings)
	}
	h := Holders{At: now.Add(time.Minute), Pods: map[string]PodRef{}}
	if got, _ := s.ReleaseGone(ctx, h, AnonymousGrace); len(got) != 0 {
		t.Fatalf("released within the grace: %+v", got)
	}
	// The app container of a listed pod now holds the token: its bind
	// takes it over.
	lis.set(podRes("ns", "app", []string{tp.GPUs[0].PCI}, tok))
	now = now.Add(2 * time.Second)
	res, err = (&Binder{Store: s, Lister: lis}).BindTokens(ctx, tok, ByAgent)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Released) != 1 || res.Bindings[0].Pod.Name != "app" || len(res.Bindings[0].GPUs) != 1 {
		t.Fatalf("take-over: released %+v, bindings %+v", res.Released, res.Bindings)
	}
	// Bound again for no pod; released once the grace has passed.
	if _, err := s.ReleaseIf(ctx, func(Binding) bool { return true }); err != nil {
		t.Fatal(err)
	}
	lis.set()
	if _, err := (&Binder{Store: s, Lister: lis}).BindTokens(ctx, tok, ByAgent); err != nil {
		t.Fatal(err)
	}
	h = Holders{At: now.Add(AnonymousGrace + time.Second), Pods: map[string]PodRef{}}
	if got, _ := s.ReleaseGone(ctx, h, AnonymousGrace); len(got) != 1 {
		t.Fatalf("released %+v after the grace, want the anonymous binding", got)
	}
}
