package cniinstall

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/railyard-io/railyard/internal/atomicfile"
)

// Options say what to copy where.
type Options struct {
	// Source is the binary to install (in the image:
	// /usr/local/bin/railyard-cni).
	Source string
	// DestDir is the node's CNI bin directory as mounted in the container.
	// It must exist: a node without one has no CNI to call railyard-cni.
	DestDir string
	// Name is the file name in DestDir ("railyard-cni", the NAD's "type").
	Name string
}

// Result says what Install did.
type Result struct {
	Path    string // DestDir/Name
	Changed bool   // false: an identical file was already there
	SHA256  string
	Size    int64
	// RemovedTemps are temporary files of an earlier run that died.
	RemovedTemps []string
}

const tempPrefix = ".railyard-cni.tmp-"

// Install copies Source to DestDir/Name atomically (see the package doc).
func Install(o Options) (Result, error) {
	src, err := os.Open(o.Source)
	if err != nil {
		return Result{}, fmt.Errorf("install: %w", err)
	}
	defer src.Close()
	st, err := src.Stat()
	if err != nil {
		return Result{}, fmt.Errorf("install: %w", err)
	}
	if !st.Mode().IsRegular() {
		return Result{}, fmt.Errorf("install: source %s is not a regular file", o.Source)
	}
	return install(o, src)
}

// install does the work on an open source, so tests can make the copy fail.
func install(o Options, src io.Reader) (Result, error) {
	if o.Name == "" || o.Name != filepath.Base(o.Name) || o.Name == "." || o.Name == ".." || strings.HasPrefix(o.Name, tempPrefix) {
		return Result{}, fmt.Errorf("install: file name %q: want a plain name", o.Name)
	}
	dst := filepath.Join(o.DestDir, o.Name)
	res := Result{Path: dst}
	if st, err := os.Stat(o.DestDir); err != nil {
		return res, fmt.Errorf("install: CNI bin directory: %w", err)
	} else if !st.IsDir() {
		return res, fmt.Errorf("install: CNI bin directory %s is not a directory", o.DestDir)
	}
	removed, err := removeStaleTemps(o.DestDir)
	res.RemovedTemps = removed
	if err != nil {
		return res, err
	}

	data, err := io.ReadAll(src)
	if err != nil {
		return res, fmt.Errorf("install: read source: %w", err)
	}
	sum := sha256.Sum256(data)
	res.SHA256, res.Size = hex.EncodeToString(sum[:]), int64(len(data))
	if same, err := identical(dst, data); err != nil {
		return res, err
	} else if same {
		return res, nil
	}

	tmp, err := os.CreateTemp(o.DestDir, tempPrefix)
	if err != nil {
		return res, fmt.Errorf("install: %w", err)
	}
	ok := false
	defer func() {
		if !ok {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if _, err := tmp.Write(data); err != nil {
		return res, fmt.Errorf("install: write %s: %w", tmp.Name(), err)
	}
	if err := tmp.Chmod(0o755); err != nil {
		return res, fmt.Errorf("install: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		return res, fmt.Errorf("install: fsync %s: %w", tmp.Name(), err)
	}
	if err := tmp.Close(); err != nil {
		return res, fmt.Errorf("install: %w", err)
	}
	if err := os.Rename(tmp.Name(), dst); err != nil {
		return res, fmt.Errorf("install: %w", err)
	}
	ok = true
	res.Changed = true
	if err := atomicfile.SyncDir(o.DestDir); err != nil {
		return res, fmt.Errorf("install: %w", err)
	}
	return res, nil
}

// identical reports whether path is a regular 0755 file holding data.
func identical(path string, data []byte) (bool, error) {
	st, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("install: %w", err)
	}
	if st.IsDir() {
		return false, fmt.Errorf("install: %s is a directory", path)
	}
	if !st.Mode().IsRegular() || st.Mode().Perm() != 0o755 || st.Size() != int64(len(data)) {
		return false, nil
	}
	old, err := os.ReadFile(path)
	if err != nil {
		return false, fmt.Errorf("install: %w", err)
	}
	return bytes.Equal(old, data), nil
}

func removeStaleTemps(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("install: %w", err)
	}
	var removed []string
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), tempPrefix) || !e.Type().IsRegular() {
			continue
		}
		p := filepath.Join(dir, e.Name())
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return removed, fmt.Errorf("install: remove stale %s: %w", p, err)
		}
		removed = append(removed, p)
	}
	return removed, nil
}
