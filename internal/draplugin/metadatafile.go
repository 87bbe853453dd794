package draplugin

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"github.com/railyard-io/railyard/internal/atomicfile"
)

// metadataWriteFile is the kubelet plugin helper's WriteFile for its
// KEP-5304 files (kubeletplugin.MetadataFileOps). The helper writes a
// request's metadata file at Prepare and again once railyard-cni's attach
// is known, and a CDI spec bind-mounts that file, by inode, into the
// containers. The helper's own writer replaces a file by rename. A
// container already running then keeps the old, deleted inode. Worse, a
// container that runc is creating at that moment fails: runc's read-only
// remount of the bind mount finds the source deleted ("possibly malicious
// path detected -- refusing to operate on ... (deleted)", seen on the 1.37
// multi-node cluster under load).
//
// So a metadata file that already exists is rewritten in place: the same
// inode, the new content written from offset 0 in one write, then the
// file cut to its length. A reader racing the rewrite may see the new
// stream followed for an instant by the old one's tail; the stream's
// first object is whole either way. New files and the CDI specs (in
// cdiDir, read by path) are still written by rename.
func metadataWriteFile(cdiDir string) func(name string, data []byte, perm os.FileMode) error {
	return func(name string, data []byte, perm os.FileMode) error {
		if filepath.Dir(name) != filepath.Clean(cdiDir) { // Dir cleans its result
			err := rewriteInPlace(name, data)
			if !errors.Is(err, os.ErrNotExist) {
				return err
			}
		}
		return atomicfile.WriteFile(name, data, perm)
	}
}

// rewriteInPlace overwrites the regular file name with data, keeping its
// inode; os.ErrNotExist when there is no such file. A symlink is refused.
func rewriteInPlace(name string, data []byte) error {
	f, err := os.OpenFile(name, os.O_WRONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return err
		}
		return fmt.Errorf("draplugin: rewriting %s in place: %w", name, err)
	}
	err = func() error {
		fi, err := f.Stat()
		if err != nil {
			return err
		}
		if !fi.Mode().IsRegular() {
			return fmt.Errorf("not a regular file (%s)", fi.Mode().Type())
		}
		if _, err := f.WriteAt(data, 0); err != nil {
			return err
		}
		if err := f.Truncate(int64(len(data))); err != nil {
			return err
		}
		return f.Sync()
	}()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("draplugin: rewriting %s in place: %w", name, err)
	}
	return nil
}
