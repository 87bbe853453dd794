package doctor

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/railyard-io/railyard/internal/inputfile"
	"github.com/railyard-io/railyard/internal/sysfs"
)

// HostFiles reads host files other than sysfs (/proc, /etc, /lib) below
// a root directory: "/" on a node, "/host" in a pod that mounts the host's
// root there, a generated tree in tests.
type HostFiles struct {
	Root string
	// Recorder, when set, is told every host path read and every path a
	// glob matched (absolute, without the root).
	Recorder sysfs.Recorder
}

// maxHostFile bounds one read: these are small text files.
const maxHostFile = 1 << 20

func (h HostFiles) path(p string) (string, error) {
	if !filepath.IsAbs(p) || strings.Contains(p, "\x00") {
		return "", fmt.Errorf("not an absolute path: %q", p)
	}
	root := h.Root
	if root == "" {
		root = "/"
	}
	return filepath.Join(root, filepath.Clean(p)), nil
}

// Read reads an absolute host path ("/proc/modules") through
// internal/inputfile: a FIFO, a device or a directory fails at once
// (inputfile.ErrNotRegular) instead of blocking, and a file longer than
// maxHostFile fails (inputfile.ErrTooLarge) instead of being cut.
func (h HostFiles) Read(p string) ([]byte, error) {
	full, err := h.path(p)
	if err != nil {
		return nil, err
	}
	if h.Recorder != nil {
		h.Recorder.Record(filepath.Clean(p))
	}
	return inputfile.Read(full, maxHostFile)
}

// Glob returns the host paths (absolute, without the root) matching
// pattern, sorted.
func (h HostFiles) Glob(pattern string) ([]string, error) {
	full, err := h.path(pattern)
	if err != nil {
		return nil, err
	}
	matches, err := filepath.Glob(full)
	if err != nil {
		return nil, err
	}
	root := h.Root
	if root == "" {
		root = "/"
	}
	out := make([]string, 0, len(matches))
	for _, m := range matches {
		rel, err := filepath.Rel(root, m)
		if err != nil {
			continue
		}
		out = append(out, "/"+rel)
		if h.Recorder != nil {
			h.Recorder.Record("/" + rel)
		}
	}
	return out, nil
}
