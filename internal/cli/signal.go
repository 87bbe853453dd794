package cli

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// Grace is how long Run waits, after a signal, for the command to stop by
// itself (removing a partly written tree, say) before it returns anyway.
const Grace = 3 * time.Second

// ErrInterrupted is returned (wrapped) by Run when the command was stopped
// by SIGINT or SIGTERM. Its exit code is 130, as a shell reports Ctrl-C.
var ErrInterrupted = errors.New("interrupted")

type interrupted struct{ err error }

func (e interrupted) Error() string {
	if e.err == nil || errors.Is(e.err, context.Canceled) {
		return ErrInterrupted.Error()
	}
	return ErrInterrupted.Error() + " (" + e.err.Error() + ")"
}

func (e interrupted) Unwrap() []error {
	if e.err == nil {
		return []error{ErrInterrupted}
	}
	return []error{ErrInterrupted, e.err}
}

// ExitCode is 128 + SIGINT.
func (interrupted) ExitCode() int { return 130 }

// NotifyContext returns a context cancelled by the first SIGINT or SIGTERM.
// That signal is the command's to handle (Run then returns ErrInterrupted
// within Grace); a second one gets the default action and ends the process
// at once.
func NotifyContext(parent context.Context) (context.Context, context.CancelFunc) {
	ctx, stop := signal.NotifyContext(parent, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-ctx.Done()
		stop() // the default action is back for the next signal
	}()
	return ctx, stop
}

// runInterruptible runs fn and returns its error, or, once ctx is done,
// ErrInterrupted: as soon as fn returns, or after Grace if fn is stuck in
// something that does not look at ctx (a blocking open of a FIFO).
func runInterruptible(ctx context.Context, fn func() error) error {
	done := make(chan error, 1)
	go func() { done <- fn() }()
	select {
	case err := <-done:
		if ctx.Err() != nil {
			return interrupted{err}
		}
		return err
	case <-ctx.Done():
	}
	t := time.NewTimer(Grace)
	defer t.Stop()
	select {
	case err := <-done:
		return interrupted{err}
	case <-t.C:
		return interrupted{errors.New("the command did not stop within " + Grace.String())}
	}
}
