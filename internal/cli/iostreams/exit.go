package iostreams

import (
	"io"
	"os"

	"golang.org/x/term"
)

// ExitError is a command's error with the status cmd/railyard exits with
// (doctor and fabric: 1 warnings, 2 failures; migrate: 1 lossy, 2 invalid
// input). Err says why; it is printed as the error.
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string { return e.Err.Error() }

// Unwrap returns the reason.
func (e *ExitError) Unwrap() error { return e.Err }

// ExitCode is the status the process exits with.
func (e *ExitError) ExitCode() int { return e.Code }

// IsTerminal reports whether w is a terminal (where a frame may replace
// the last, or a progress bar redraw itself): an *os.File whose
// descriptor answers the terminal ioctl. A pipe, a regular file, a buffer
// and /dev/null are not.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
