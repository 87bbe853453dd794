package node

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/railyard-io/railyard/api/nodesetup/v1alpha1"
	"github.com/railyard-io/railyard/internal/cli/clitest"
	"github.com/railyard-io/railyard/internal/cli/iostreams"
	"github.com/railyard-io/railyard/internal/inputfile"
)

// runWithin runs node apply with args and fails the test when it has not
// returned within a few seconds (a FIFO policy blocked, a 1ns watch
// interval spun).
func runWithin(t *testing.T, root string, args ...string) (string, error) {
	t.Helper()
	type result struct {
		out string
		err error
	}
	done := make(chan result, 1)
	go func() {
		out, _, err := clitest.Run(t, cmdWith(fakeApplier{root}), "", args...)
		done <- result{out, err}
	}()
	select {
	case r := <-done:
		return r.out, r.err
	case <-time.After(5 * time.Second):
		t.Fatalf("node apply %s did not return", strings.Join(args, " "))
		return "", nil
	}
}

// The policy is read bounded and only from a regular file: /dev/zero ran
// node apply out of memory, a FIFO blocked it for good.
func TestApplyReadsThePolicyBoundedFromARegularFileOnly(t *testing.T) {
	t.Parallel()
	root, _ := setup(t)
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.yaml")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	large := filepath.Join(dir, "large.yaml")
	if err := os.WriteFile(large, bytes.Repeat([]byte("#\n"), v1alpha1.MaxPolicySize/2+1), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		path string
		want error
	}{
		"dev_zero":  {"/dev/zero", inputfile.ErrNotRegular},
		"fifo":      {fifo, inputfile.ErrNotRegular},
		"too_large": {large, inputfile.ErrTooLarge},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := runWithin(t, root, "--policy", tc.path)
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.path) {
				t.Fatalf("err = %v, want %v naming %s", err, tc.want, tc.path)
			}
		})
	}
	t.Run("watch", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		var out, errOut bytes.Buffer
		if err := watchLoop(ctx, iostreams.Streams{Out: &out, ErrOut: &errOut}, "/dev/zero", 20*time.Millisecond, fakeApplier{root}.build, false); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(errOut.String(), "/dev/zero") || !strings.Contains(errOut.String(), inputfile.ErrNotRegular.Error()) {
			t.Fatalf("stderr = %q", errOut.String())
		}
	})
}

// --watch --interval 1ns burnt a core re-reading the policy: the interval
// has a documented minimum, and the error names the flag.
func TestApplyWatchRefusesAnIntervalBelowTheMinimum(t *testing.T) {
	t.Parallel()
	root, policy := setup(t)
	for _, interval := range []string{"1ns", "999ms", "0s", "-1s"} {
		t.Run(interval, func(t *testing.T) {
			t.Parallel()
			_, err := runWithin(t, root, "--policy", policy, "--watch", "--interval", interval)
			if err == nil || !strings.Contains(err.Error(), "--interval") || !strings.Contains(err.Error(), MinInterval.String()) {
				t.Fatalf("err = %v, want --interval refused below %s", err, MinInterval)
			}
		})
	}
}

func TestApplyHelpHasExamples(t *testing.T) {
	t.Parallel()
	out, _, err := clitest.Run(t, NewCommand, "", "apply", "--help")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Examples:", "railyard node apply --policy /etc/railyard/node-policy.yaml --watch", "--json"} {
		if !strings.Contains(out, want) {
			t.Errorf("help lacks %q:\n%s", want, out)
		}
	}
}
