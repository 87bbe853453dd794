package binding

import (
	"context"
	"errors"
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// readOnlyBindMount makes dir read-only (a read-only bind mount of itself)
// until the test ends. It needs root: permissions do not stop root.
func readOnlyBindMount(t *testing.T, dir string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root for a read-only bind mount")
	}
	if err := unix.Mount(dir, dir, "", unix.MS_BIND, ""); err != nil {
		t.Skipf("bind mount: %v", err)
	}
	t.Cleanup(func() { _ = unix.Unmount(dir, unix.MNT_DETACH) })
	if err := unix.Mount("", dir, "", unix.MS_REMOUNT|unix.MS_BIND|unix.MS_RDONLY, ""); err != nil {
		t.Fatalf("remount read-only: %v", err)
	}
}

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
	readOnlyBindMount(t, s.Dir())
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

// fullTmpfs mounts a 1 MiB tmpfs on dir (root only) and fills it, until the
// test ends: every write then fails with ENOSPC.
func fullTmpfs(t *testing.T, dir string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a tmpfs")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=1m"); err != nil {
		t.Skipf("mount tmpfs: %v", err)
	}
	t.Cleanup(func() { _ = unix.Unmount(dir, unix.MNT_DETACH) })
	f, err := os.Create(dir + "/fill")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	for {
		if _, err := f.Write(buf); err != nil {
			if !errors.Is(err, unix.ENOSPC) {
				t.Fatal(err)
			}
			return
		}
	}
}

// TestNoViewOnAFullFileSystemSaysSoRootTmpfs: with the state directory's
// file system full, the agent cannot write the view, and binders were
// told only "no node view published by railyard-agent yet", which reads
// like a start-up race. The error must say the directory is full (ENOSPC).
func TestNoViewOnAFullFileSystemSaysSoRootTmpfs(t *testing.T) {
	dir := t.TempDir()
	fullTmpfs(t, dir)
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
