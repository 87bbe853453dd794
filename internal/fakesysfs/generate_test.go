package fakesysfs

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestGenerateBounds(t *testing.T) {
	d, err := DualRailNode()
	if err != nil {
		t.Fatal(err)
	}
	for _, opt := range []Options{{VFsPerPF: -1}, {VFsPerPF: MaxVFsPerPF + 1}, {VFsPerPF: 100000}, {TotalVFs: 65536}, {TotalVFs: -1}} {
		dir := filepath.Join(t.TempDir(), "sys")
		if err := Generate(dir, d, opt); err == nil || !strings.Contains(err.Error(), "want 0 to") {
			t.Errorf("%+v: err = %v", opt, err)
		}
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("%+v: %s created", opt, dir)
		}
	}
}

// A cancelled generation stops and leaves its directory as it found it:
// absent, or empty.
func TestGenerateCancelledLeavesNothing(t *testing.T) {
	d, err := DualRailNode()
	if err != nil {
		t.Fatal(err)
	}
	for _, existed := range []bool{false, true} {
		dir := filepath.Join(t.TempDir(), "sys")
		if existed {
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		start := time.Now()
		err := GenerateContext(ctx, dir, d, Options{VFsPerPF: MaxVFsPerPF}) // 16 PFs x 256 VFs: seconds
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("existed=%v: err = %v, want the deadline", existed, err)
		}
		if took := time.Since(start); took > 5*time.Second {
			t.Errorf("existed=%v: stopped after %v", existed, took)
		}
		entries, statErr := os.ReadDir(dir)
		switch {
		case existed && (statErr != nil || len(entries) != 0):
			t.Errorf("existing dir: %d entries left, %v", len(entries), statErr)
		case !existed && !os.IsNotExist(statErr):
			t.Errorf("new dir still there: %v", statErr)
		}
	}
}
