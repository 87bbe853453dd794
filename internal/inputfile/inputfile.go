package inputfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// ErrNotRegular is returned (wrapped) for a path that is not a regular
// file: a FIFO (whose read would block forever), a device such as
// /dev/zero (endless), a socket or a directory.
var ErrNotRegular = errors.New("not a regular file")

// ErrTooLarge is returned (wrapped) for input longer than its limit.
var ErrTooLarge = errors.New("too large")

// Read returns the content of the regular file at path, at most max bytes.
// A longer file fails with ErrTooLarge, anything but a regular file with
// ErrNotRegular; both come wrapped in an *fs.PathError naming the path, and
// a missing file keeps fs.ErrNotExist.
func Read(path string, max int64) ([]byte, error) {
	f, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := ReadLimited(f, max)
	if err != nil {
		return nil, &fs.PathError{Op: "read", Path: path, Err: err}
	}
	return b, nil
}

// Open opens the regular file at path for reading without blocking on a
// FIFO and without making a terminal the controlling one; anything but a
// regular file fails with ErrNotRegular before any read. The caller bounds
// what it reads (ReadLimited).
func Open(path string) (*os.File, error) { return OpenRegular(path, os.O_RDONLY, 0) }

// OpenRegular opens path with flag (and perm when it creates the file),
// adding O_NONBLOCK and O_NOCTTY, and keeps it only when it is a regular
// file: a writer (a log file) is refused a FIFO, a device or a socket the
// same way a reader is.
func OpenRegular(path string, flag int, perm fs.FileMode) (*os.File, error) {
	f, err := os.OpenFile(path, flag|syscall.O_NONBLOCK|syscall.O_NOCTTY, perm)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, &fs.PathError{Op: "open", Path: path, Err: fmt.Errorf("%w (%s)", ErrNotRegular, TypeName(st.Mode()))}
	}
	return f, nil
}

// ReadLimited reads r to its end, at most max bytes: one byte more fails
// with ErrTooLarge (wrapped, naming the limit) without reading further.
func ReadLimited(r io.Reader, max int64) ([]byte, error) {
	if max < 0 {
		max = 0
	}
	b, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("%w: more than %d bytes", ErrTooLarge, max)
	}
	return b, nil
}

// TypeName names a file's type for messages ("a FIFO", "a directory").
func TypeName(m fs.FileMode) string {
	switch {
	case m.IsRegular():
		return "a regular file"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m.IsDir():
		return "a directory"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	}
	return fmt.Sprintf("file mode %v", m.Type())
}
