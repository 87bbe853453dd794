package ibneighbor

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"time"

	"github.com/railyard-io/railyard/internal/termsafe"
)

// Exec's defaults.
const (
	// DefaultTimeout bounds one command: smpquery's own MAD timeouts and
	// retries end within a few seconds.
	DefaultTimeout = 10 * time.Second
	// DefaultMaxOutput bounds a command's standard output (what the
	// parsers read).
	DefaultMaxOutput = maxParse
	// maxStderr bounds the standard error kept for an error's first line.
	maxStderr = 4 << 10
)

// Exec is the real Runner: it runs the command on this host
// (exec.CommandContext, found in PATH) with a timeout, keeps at most
// MaxOutput bytes of its standard output (more is an error) and puts the
// first line of its standard error in the error of a failed run.
type Exec struct {
	// Timeout bounds each command (DefaultTimeout when 0).
	Timeout time.Duration
	// MaxOutput bounds its standard output (DefaultMaxOutput when 0).
	MaxOutput int
}

var _ Runner = Exec{}

// Run runs name with args.
func (e Exec) Run(ctx context.Context, name string, args ...string) ([]byte, error) {
	timeout, limit := e.Timeout, e.MaxOutput
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	if limit <= 0 {
		limit = DefaultMaxOutput
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	stdout, stderr := &capped{limit: limit}, &capped{limit: maxStderr}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.WaitDelay = time.Second // a child left holding the pipes does not hold Run
	err := cmd.Run()
	line := strings.Join(append([]string{name}, args...), " ")
	switch {
	case errors.Is(err, exec.ErrNotFound):
		return nil, fmt.Errorf("%s: %w", line, err)
	case err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded):
		return stdout.b, fmt.Errorf("%s: no answer within %s: %w", line, timeout, ctx.Err())
	case err != nil && ctx.Err() != nil:
		return stdout.b, fmt.Errorf("%s: %w", line, ctx.Err())
	case err != nil:
		if first := firstLine(stderr.b); first != "" {
			return stdout.b, fmt.Errorf("%s: %w: %s", line, err, first)
		}
		return stdout.b, fmt.Errorf("%s: %w", line, err)
	case stdout.over:
		return nil, fmt.Errorf("%s: output over %d bytes", line, limit)
	}
	return stdout.b, nil
}

// capped keeps the first limit bytes written to it and drops the rest (the
// command is never stopped by a full pipe).
type capped struct {
	b     []byte
	limit int
	over  bool
}

func (c *capped) Write(p []byte) (int, error) {
	if room := c.limit - len(c.b); room < len(p) {
		c.b = append(c.b, p[:max(room, 0)]...)
		c.over = true
		return len(p), nil
	}
	c.b = append(c.b, p...)
	return len(p), nil
}

// firstLine returns the first non-empty line of b, trimmed, bounded and
// safe to print (no terminal escapes).
func firstLine(b []byte) string {
	for _, l := range strings.Split(string(b), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			return termsafe.Escape(text(clip(l)))
		}
	}
	return ""
}
