package cniinstall

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"
)

func writeFile(t *testing.T, path string, data string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil { // umask
		t.Fatal(err)
	}
}

type snap struct {
	mode  os.FileMode
	data  string
	mtime time.Time
	ino   uint64
}

// snapshot records every entry of dir (names, modes, contents, mtimes,
// inodes), to prove Install touched nothing but its target.
func snapshot(t *testing.T, dir string) map[string]snap {
	t.Helper()
	out := map[string]snap{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		st, err := os.Lstat(p)
		if err != nil {
			return err
		}
		s := snap{mode: st.Mode(), mtime: st.ModTime(), ino: st.Sys().(*syscall.Stat_t).Ino}
		if st.Mode().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			s.data = string(b)
		}
		rel, _ := filepath.Rel(dir, p)
		out[rel] = s
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func setup(t *testing.T) (src, dir string) {
	t.Helper()
	root := t.TempDir()
	src = filepath.Join(root, "railyard-cni")
	writeFile(t, src, "NEW BINARY", 0o555)
	dir = filepath.Join(root, "opt-cni-bin")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "bridge"), "bridge plugin", 0o755)
	writeFile(t, filepath.Join(dir, "host-local"), "host-local plugin", 0o700)
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("bridge", filepath.Join(dir, "bridge-link")); err != nil {
		t.Fatal(err)
	}
	return src, dir
}

func TestInstallCopiesWithMode0755AndTouchesNothingElse(t *testing.T) {
	src, dir := setup(t)
	before := snapshot(t, dir)
	res, err := Install(Options{Source: src, DestDir: dir, Name: "railyard-cni"})
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(dir, "railyard-cni")
	sum := sha256.Sum256([]byte("NEW BINARY"))
	if !res.Changed || res.Path != dst || res.Size != int64(len("NEW BINARY")) || res.SHA256 != hex.EncodeToString(sum[:]) {
		t.Fatalf("result %+v", res)
	}
	after := snapshot(t, dir)
	got := after["railyard-cni"]
	if got.data != "NEW BINARY" || got.mode != 0o755 {
		t.Fatalf("installed file: mode %v data %q", got.mode, got.data)
	}
	delete(after, "railyard-cni")
	delete(after, ".") // the directory's mtime changes with the rename
	delete(before, ".")
	if len(after) != len(before) {
		t.Fatalf("entries before %v, after %v", keys(before), keys(after))
	}
	for k, b := range before {
		if a := after[k]; a != b {
			t.Errorf("%s changed: %+v -> %+v", k, b, a)
		}
	}
}

func keys(m map[string]snap) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

func TestInstallLeavesIdenticalFileAlone(t *testing.T) {
	src, dir := setup(t)
	if _, err := Install(Options{Source: src, DestDir: dir, Name: "railyard-cni"}); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, dir)
	res, err := Install(Options{Source: src, DestDir: dir, Name: "railyard-cni"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Changed {
		t.Fatal("second install of the same binary reported a change")
	}
	after := snapshot(t, dir)
	if after["railyard-cni"] != before["railyard-cni"] {
		t.Fatalf("identical file was rewritten: %+v -> %+v", before["railyard-cni"], after["railyard-cni"])
	}
	// A different mode alone is a change (the runtime must be able to exec it).
	if err := os.Chmod(filepath.Join(dir, "railyard-cni"), 0o644); err != nil {
		t.Fatal(err)
	}
	if res, err := Install(Options{Source: src, DestDir: dir, Name: "railyard-cni"}); err != nil || !res.Changed {
		t.Fatalf("mode 0644 target: changed=%v err=%v", res.Changed, err)
	}
	if st, _ := os.Stat(filepath.Join(dir, "railyard-cni")); st.Mode().Perm() != 0o755 {
		t.Fatalf("mode %v", st.Mode())
	}
}

// TestInstallReplacesByRenameKeepingTheRunningFile: a process that has the
// old binary open (as an exec'd CNI plugin has) keeps reading the old
// content; the path names a new inode with the new content.
func TestInstallReplacesByRenameKeepingTheRunningFile(t *testing.T) {
	src, dir := setup(t)
	dst := filepath.Join(dir, "railyard-cni")
	writeFile(t, dst, "OLD BINARY", 0o755)
	old, err := os.Open(dst)
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	oldIno := snapshot(t, dir)["railyard-cni"].ino
	if _, err := Install(Options{Source: src, DestDir: dir, Name: "railyard-cni"}); err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(old)
	if err != nil || string(b) != "OLD BINARY" {
		t.Fatalf("open old file reads %q, %v", b, err)
	}
	now := snapshot(t, dir)["railyard-cni"]
	if now.ino == oldIno || now.data != "NEW BINARY" {
		t.Fatalf("target not replaced by rename: inode %d (old %d), data %q", now.ino, oldIno, now.data)
	}
}

type failingReader struct{ n int }

func (f *failingReader) Read(p []byte) (int, error) {
	if f.n == 0 {
		return 0, errors.New("injected read failure")
	}
	n := copy(p, bytes.Repeat([]byte("x"), min(len(p), f.n)))
	f.n -= n
	return n, nil
}

func TestInstallFailuresLeaveTheDirectoryAsItWas(t *testing.T) {
	src, dir := setup(t)
	dst := filepath.Join(dir, "railyard-cni")
	writeFile(t, dst, "OLD BINARY", 0o755)
	before := snapshot(t, dir)
	for name, run := range map[string]func() error{
		"read fails midway": func() error {
			_, err := install(Options{Source: src, DestDir: dir, Name: "railyard-cni"}, &failingReader{n: 5})
			return err
		},
		"source missing": func() error {
			_, err := Install(Options{Source: src + ".missing", DestDir: dir, Name: "railyard-cni"})
			return err
		},
		"source is a directory": func() error {
			_, err := Install(Options{Source: dir, DestDir: dir, Name: "railyard-cni"})
			return err
		},
		"destination directory missing": func() error {
			_, err := Install(Options{Source: src, DestDir: filepath.Join(dir, "nope"), Name: "railyard-cni"})
			return err
		},
		"target is a directory": func() error {
			_, err := Install(Options{Source: src, DestDir: dir, Name: "sub"})
			return err
		},
		"name with a slash": func() error {
			_, err := Install(Options{Source: src, DestDir: dir, Name: "../railyard-cni"})
			return err
		},
		"name of a temp file": func() error {
			_, err := Install(Options{Source: src, DestDir: dir, Name: tempPrefix + "x"})
			return err
		},
	} {
		if err := run(); err == nil {
			t.Errorf("%s: no error", name)
		}
		after := snapshot(t, dir)
		for k, b := range before {
			if a := after[k]; a != b {
				t.Errorf("%s: %s changed: %+v -> %+v", name, k, b, a)
			}
		}
		if len(after) != len(before) {
			t.Errorf("%s: entries %v, want %v", name, keys(after), keys(before))
		}
	}
}

func TestInstallRemovesOnlyItsOwnStaleTemps(t *testing.T) {
	src, dir := setup(t)
	stale := filepath.Join(dir, tempPrefix+"123")
	writeFile(t, stale, "half", 0o600)
	other := filepath.Join(dir, ".other.tmp-123")
	writeFile(t, other, "someone else's", 0o600)
	res, err := Install(Options{Source: src, DestDir: dir, Name: "railyard-cni"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.RemovedTemps) != 1 || res.RemovedTemps[0] != stale {
		t.Fatalf("removed %v", res.RemovedTemps)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Fatalf("stale temp still there: %v", err)
	}
	if _, err := os.Stat(other); err != nil {
		t.Fatalf("another program's file removed: %v", err)
	}
}

func TestRunPrintsWhatItDid(t *testing.T) {
	src, dir := setup(t)
	var out, errOut bytes.Buffer
	args := []string{"--source", src, "--cni-bin-dir", dir}
	if err := Run(t.Context(), args, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	if err := Run(t.Context(), args, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	dst := filepath.Join(dir, "railyard-cni")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "installed "+dst+" sha256:") || !strings.HasPrefix(lines[1], "unchanged "+dst+" sha256:") ||
		!strings.Contains(lines[0], " 10 bytes (railyard-cni-install dev (unknown))") {
		t.Fatalf("output:\n%s", out.String())
	}
	if err := Run(t.Context(), []string{"extra"}, &out, &errOut); err == nil {
		t.Fatal("extra argument accepted")
	}
}
