package cni

import (
	"context"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/containernetworking/cni/pkg/types"

	"github.com/railyard-io/railyard/internal/draview"
)

// withFIFO puts a FIFO at path and runs f, which must return within 10
// seconds; on a hang a writer is opened to let a blocked reader go and
// the test fails.
func withFIFO(t *testing.T, path string, f func()) {
	t.Helper()
	_ = os.Remove(path)
	must(t, syscall.Mkfifo(path, 0o600))
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		if w, err := os.OpenFile(path, os.O_WRONLY, 0); err == nil {
			w.Close()
		}
		<-done
		t.Fatalf("blocked on the FIFO %s", path)
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
