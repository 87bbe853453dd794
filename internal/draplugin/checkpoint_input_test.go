package draplugin

import (
	"errors"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/railyard-io/railyard/internal/inputfile"
)

// TestCheckpointMustBeRegular: a FIFO as the checkpoint blocked the
// driver's start for ever; it must fail at once with ErrNotRegular.
func TestCheckpointMustBeRegular(t *testing.T) {
	t.Parallel()
	p := filepath.Join(t.TempDir(), "checkpoint.json")
	if err := unix.Mkfifo(p, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := loadCheckpoint(p); done <- err }()
	select {
	case err := <-done:
		if !errors.Is(err, inputfile.ErrNotRegular) {
			t.Errorf("err = %v, want inputfile.ErrNotRegular", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("blocked reading the checkpoint (still blocked: the FIFO has no writer)")
	}
}
