package topo

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A FIFO as the binding store's bindings.json or view.json fails its read
// at once (the store reads through internal/inputfile) instead of blocking
// topo forever: a FIFO bindings.json is an error, a FIFO view.json (read
// only for RDMA names) is not.
func TestBindingsFlagFIFOFailsAtOnce(t *testing.T) {
	t.Parallel()
	for file, wantErr := range map[string]string{"bindings.json": "not a regular file (a FIFO)", "view.json": ""} {
		dir := t.TempDir()
		if err := syscall.Mkfifo(filepath.Join(dir, file), 0o644); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() {
			_, _, err := run(t, "--machine", "roce-8gpu-4nic", "--bindings", dir)
			done <- err
		}()
		select {
		case err := <-done:
			if (wantErr == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), wantErr)) {
				t.Errorf("FIFO %s: err %v, want %q", file, err, wantErr)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("topo --bindings hangs on a FIFO %s", file)
		}
	}
}
