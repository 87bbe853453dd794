package cni

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/containernetworking/cni/pkg/types"

	"github.com/railyard-io/railyard/internal/draview"
	"github.com/railyard-io/railyard/internal/inputfile"
)

// withFIFO puts a FIFO at path and runs f, which must return within 10
// seconds; on a hang writers are opened to let blocked readers go and the
// test fails.
func withFIFO(t *testing.T, path string, f func()) {
	t.Helper()
	_ = os.Remove(path)
	must(t, syscall.Mkfifo(path, 0o600))
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		// Let every blocked reader go (each open of a writer ends one
		// read with EOF) until f returns.
		for {
			if w, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
				w.Close()
			}
			select {
			case <-done:
				t.Fatalf("blocked on the FIFO %s", path)
			case <-time.After(10 * time.Millisecond):
			}
		}
	}
}

// TestDRAViewFIFOFailsFastFakeVF: a FIFO as dra-view.json fails ADD at
// once (try again later) instead of blocking the pod's sandbox creation,
// and DEL still succeeds.
func TestDRAViewFIFOFailsFastFakeVF(t *testing.T) {
	t.Parallel()
	w := newDRAWorld(newWorld(t))
	a := w.args("sb1", 0, "net1", podCNIArgs)
	withFIFO(t, draview.Path(w.dir), func() {
		_, err := w.P().Add(context.Background(), a)
		if Code(err) != types.ErrTryAgainLater {
			t.Errorf("ADD with a FIFO as the DRA view: code %d, %v", Code(err), err)
		}
		if err := w.P().Del(context.Background(), a); err != nil {
			t.Errorf("DEL with a FIFO as the DRA view: %v", err)
		}
	})
	w.Pristine()
}

// TestBindingViewFIFOFailsFastFakeVF: a FIFO as the binding store's
// view.json fails a late-binding ADD at once (the store reads it through
// inputfile) instead of blocking the pod's sandbox creation, and DEL
// still succeeds.
func TestBindingViewFIFOFailsFastFakeVF(t *testing.T) {
	t.Parallel()
	w := newLateWorld(newWorld(t))
	p := w.plugin()
	a := args("sb1", w.Pod(0), "net1", w.conf(w.tokens[0], map[string]any{"pciBusID": w.tokens[0], "bindingDir": w.dir}))
	a.PluginArgs = podCNIArgs
	withFIFO(t, filepath.Join(w.dir, "view.json"), func() {
		if _, err := p.Add(context.Background(), a); !errors.Is(err, inputfile.ErrNotRegular) {
			t.Errorf("ADD with a FIFO as the binding view: code %d, %v; want inputfile.ErrNotRegular", Code(err), err)
		}
		if err := p.Del(context.Background(), a); err != nil {
			t.Errorf("DEL with a FIFO as the binding view: %v", err)
		}
	})
	w.Pristine()
}
