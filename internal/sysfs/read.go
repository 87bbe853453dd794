package sysfs

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"syscall"
)

// MaxAttrSize bounds what one attribute read returns. The kernel serves a
// sysfs text attribute in one page; the attributes Railyard reads (IDs,
// NUMA node, port state and rate, GIDs, names) are a few dozen bytes. A
// larger file is no sysfs attribute: a wrong --sysfs root or a hostile
// tree, read no further.
const MaxAttrSize = 4096

// ErrNotRegular is returned (wrapped) for an attribute that is not a
// regular file: a FIFO (whose read would block forever), a device such as
// /dev/zero (endless), a socket or a directory.
var ErrNotRegular = errors.New("not a regular file")

// ErrTooLarge is returned (wrapped) for an attribute longer than
// MaxAttrSize.
var ErrTooLarge = fmt.Errorf("larger than %d bytes", MaxAttrSize)

// readSmall reads a sysfs attribute with open, fstat, one read and close:
// the kernel serves at most a page per attribute, and os.ReadFile's
// second read, poller registration and page-sized buffer triple the cost
// of a discovery that reads ~10 attributes per VF on nodes with thousands.
//
// The path (rel, below the root) is resolved within the root (openAt). Only
// regular files are read (sysfs attributes are regular files), and at
// most MaxAttrSize bytes. The open is non-blocking and never makes a
// terminal the controlling one, so a FIFO or a device in a fake tree fails
// at once instead of hanging discovery, and fstat rejects it before any
// read.
func (f FS) readSmall(rel string) ([]byte, error) {
	p := filepath.Join(f.Root, rel)
	fd, err := f.openAt(rel, syscall.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY)
	if err != nil {
		return nil, err
	}
	defer syscall.Close(fd)
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return nil, &fs.PathError{Op: "fstat", Path: p, Err: err}
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		return nil, &fs.PathError{Op: "read", Path: p, Err: fmt.Errorf("%w (%s)", ErrNotRegular, fileType(st.Mode))}
	}
	buf := make([]byte, 128)
	total := 0
	for {
		n, err := syscall.Read(fd, buf[total:])
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return nil, &fs.PathError{Op: "read", Path: p, Err: err}
		}
		if n == 0 {
			return buf[:total], nil
		}
		total += n
		if total > MaxAttrSize {
			return nil, &fs.PathError{Op: "read", Path: p, Err: ErrTooLarge}
		}
		if total < len(buf) {
			// sysfs returns a whole attribute in the first read.
			return buf[:total], nil
		}
		// Grow to at most one byte past the limit, which tells a file of
		// exactly MaxAttrSize bytes from a longer one.
		buf = append(buf, make([]byte, min(len(buf), MaxAttrSize+1-len(buf)))...)
	}
}

// fileType names a file type for the ErrNotRegular message.
func fileType(mode uint32) string {
	switch mode & syscall.S_IFMT {
	case syscall.S_IFIFO:
		return "a FIFO"
	case syscall.S_IFCHR:
		return "a character device"
	case syscall.S_IFBLK:
		return "a block device"
	case syscall.S_IFSOCK:
		return "a socket"
	case syscall.S_IFDIR:
		return "a directory"
	}
	return fmt.Sprintf("file type %#o", mode&syscall.S_IFMT)
}
