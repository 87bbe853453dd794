package agent

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/railyard-io/railyard/internal/inputfile"
)

// TestFileInputsRefuseFIFOsAndDevices gives the agent a FIFO (whose read
// blocked forever, and SIGTERM with it) or /dev/zero (read until memory
// ran out) as each file it reads: it must fail at once with
// inputfile.ErrNotRegular naming the input.
func TestFileInputsRefuseFIFOsAndDevices(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "roce-8gpu-4nic", 0)
	fifo := filepath.Join(e.dir, "fifo")
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	good := e.writeConfig(t, twoPools(`""`))
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"config FIFO", []string{"--config", fifo}},
		{"config /dev/zero", []string{"--config", "/dev/zero"}},
		{"gpu-map FIFO", []string{"--config", good, "--gpu-map", fifo}},
		{"gpu-map /dev/zero", []string{"--config", good, "--gpu-map", "/dev/zero"}},
		{"nccl-topo-file FIFO", []string{"--config", good, "--nccl-topo-file", fifo}},
		{"nccl-topo-file /dev/zero", []string{"--config", good, "--nccl-topo-file", "/dev/zero"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			args := append(e.args(""), tc.args...)[2:] // e.args' --config "" dropped
			done := make(chan error, 1)
			go func() {
				done <- run(ctx, args, func(string) (string, bool) { return "", false }, testStreams(), nil, nil)
			}()
			select {
			case err := <-done:
				if !errors.Is(err, inputfile.ErrNotRegular) {
					t.Errorf("err = %v, want inputfile.ErrNotRegular", err)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("the agent blocked on its input (still blocked: the FIFO has no writer)")
			}
		})
	}
}
