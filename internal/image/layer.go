package image

import (
	"archive/tar"
	"bytes"
	"fmt"
	"path"
	"sort"
	"strings"
	"time"
)

// File is one regular file of the image's layer.
type File struct {
	// Path inside the image, relative ("usr/local/bin/railyard-agent").
	Path string
	// Mode is the permission bits (0o755 for binaries).
	Mode int64
	Data []byte
}

// Layer returns an uncompressed layer tar holding files and their parent
// directories. It depends only on the paths, modes and contents: entries
// are sorted by path, owned by 0:0 without user or group names, every
// directory is 0755, and every timestamp is mtime.
func Layer(files []File, mtime time.Time) ([]byte, error) {
	mtime = mtime.UTC().Truncate(time.Second)
	seen := map[string]bool{}
	dirs := map[string]bool{}
	for _, f := range files {
		p := path.Clean(f.Path)
		if p != f.Path || path.IsAbs(p) || p == "." || strings.HasPrefix(p, "../") || p == ".." {
			return nil, fmt.Errorf("layer: path %q must be relative and clean", f.Path)
		}
		if f.Mode&^0o7777 != 0 {
			return nil, fmt.Errorf("layer: %s: mode %o has bits beyond permissions", f.Path, f.Mode)
		}
		if seen[p] {
			return nil, fmt.Errorf("layer: %s given twice", p)
		}
		seen[p] = true
		for d := path.Dir(p); d != "."; d = path.Dir(d) {
			dirs[d] = true
		}
	}
	for d := range dirs {
		if seen[d] {
			return nil, fmt.Errorf("layer: %s is both a file and a directory", d)
		}
	}

	type entry struct {
		hdr  tar.Header
		data []byte
	}
	entries := make([]entry, 0, len(dirs)+len(files))
	for d := range dirs {
		entries = append(entries, entry{hdr: tar.Header{Typeflag: tar.TypeDir, Name: d + "/", Mode: 0o755}})
	}
	for _, f := range files {
		entries = append(entries, entry{hdr: tar.Header{Typeflag: tar.TypeReg, Name: f.Path, Mode: f.Mode, Size: int64(len(f.Data))}, data: f.Data})
	}
	sort.Slice(entries, func(i, j int) bool {
		return strings.TrimSuffix(entries[i].hdr.Name, "/") < strings.TrimSuffix(entries[j].hdr.Name, "/")
	})

	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := e.hdr
		h.ModTime = mtime
		h.Format = tar.FormatPAX
		if err := tw.WriteHeader(&h); err != nil {
			return nil, fmt.Errorf("layer: %s: %w", h.Name, err)
		}
		if _, err := tw.Write(e.data); err != nil {
			return nil, fmt.Errorf("layer: %s: %w", h.Name, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("layer: %w", err)
	}
	return buf.Bytes(), nil
}
