package doctor

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// HostFiles reads host files other than sysfs (/proc, /etc, /lib) below
// a root directory: "/" on a node, "/host" in a pod that mounts the host's
// root there, a generated tree in tests.
type HostFiles struct {
	Root string
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

// Read reads an absolute host path ("/proc/modules").
func (h HostFiles) Read(p string) ([]byte, error) {
	full, err := h.path(p)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(full)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, maxHostFile))
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
	}
	return out, nil
}
