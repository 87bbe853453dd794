package binding

import (
	"context"
	"errors"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/railyard-io/railyard/internal/cni/state/statetest"
)

// TestBindOfBoundTokensOnReadOnlyStateDirRootMount: a container restart's
// PreStartContainer binds tokens that are already bound, which writes
// nothing; on a read-only state directory it failed all the same, because
// the store opened its lock file for writing. It must work (flock needs no
// write access), and a bind that does change something must fail with
// EROFS, leaving the bindings as they were.
func TestBindOfBoundTokensOnReadOnlyStateDirRootMount(t *testing.T) {
	v, tp := testView(t, "dgx-h100", 4)
	s := newTestStore(t, v, Options{})
	ctx := context.Background()
	g := gpusOf(tp)[0]
	pod := PodRef{Namespace: "ns", Name: "trainer"}
	req := Request{Pod: pod, By: ByAgent, Containers: []ContainerTokens{{Name: "main", Tokens: freeTokens(t, s, v, g.NUMA, 1, map[string]bool{}), GPUs: []string{g.PCI}}}}
	first, err := s.Bind(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	statetest.ReadOnly(t, s.Dir())
	again, err := s.Bind(ctx, req)
	if err != nil {
		t.Fatalf("binding bound tokens again on a read-only state directory: %v", err)
	}
	if again.Bound != 0 || len(again.Bindings) != 1 || again.Bindings[0].Device != first.Bindings[0].Device {
		t.Errorf("bind again = %+v, want the same device and nothing bound", again)
	}
	other := Request{Pod: PodRef{Namespace: "ns", Name: "other"}, By: ByAgent,
		Containers: []ContainerTokens{{Name: "main", Tokens: freeTokens(t, s, v, g.NUMA, 1, map[string]bool{req.Containers[0].Tokens[0]: true})}}}
	if _, err := s.Bind(ctx, other); !errors.Is(err, unix.EROFS) {
		t.Errorf("a new bind on a read-only state directory: err = %v, want EROFS", err)
	}
	if bs, err := s.Bindings(); err != nil || len(bs) != 1 {
		t.Errorf("bindings after the refused bind: %+v, %v", bs, err)
	}
}

// TestNoViewOnAFullFileSystemSaysSoRootTmpfs: with the state directory's
// file system full, the agent cannot write the view, and binders were
// told only "no node view published by railyard-agent yet", which reads
// like a start-up race. The error must say the directory is full (ENOSPC).
func TestNoViewOnAFullFileSystemSaysSoRootTmpfs(t *testing.T) {
	dir := t.TempDir()
	statetest.FullTmpfs(t, dir)
	s := NewStore(dir, Options{})
	v, _ := testView(t, "dgx-h100", 1)
	if err := s.Publish(context.Background(), *v); !errors.Is(err, unix.ENOSPC) {
		t.Fatalf("publishing on a full file system: err = %v, want ENOSPC", err)
	}
	_, err := s.View()
	if !errors.Is(err, ErrNoView) || !errors.Is(err, unix.ENOSPC) {
		t.Errorf("View() = %v, want ErrNoView and ENOSPC", err)
	}
}
