package atomicfile

import (
	"os"
	"path/filepath"
	"testing"
)

// TestWriteRemoveAndTemps: WriteFile creates the directory and replaces the
// file whole with the mode asked; Remove removes it and a second Remove is
// no error; RemoveTemps removes a died write's ".<name><digits>" and
// nothing else.
func TestWriteRemoveAndTemps(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	path := filepath.Join(dir, "view.json")
	for _, content := range []string{`{"a":1}`, `{"b":2}`} {
		if err := WriteFile(path, []byte(content), 0o640); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(path)
		if err != nil || string(b) != content {
			t.Fatalf("read %q (%v), want %q", b, err, content)
		}
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o640 {
		t.Errorf("mode %v (%v), want 0640", fi.Mode(), err)
	}
	stray, other := filepath.Join(dir, ".view.json123456"), filepath.Join(dir, "other.json")
	for _, f := range []string{stray, other} {
		if err := os.WriteFile(f, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	RemoveTemps(path)
	if _, err := os.Stat(stray); !os.IsNotExist(err) {
		t.Errorf("temporary file left: %v", err)
	}
	for _, f := range []string{path, other} {
		if _, err := os.Stat(f); err != nil {
			t.Errorf("RemoveTemps removed %s: %v", f, err)
		}
	}
	for range 2 {
		if err := Remove(path); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("Remove left %s: %v", path, err)
	}
	if err := SyncDir(filepath.Join(dir, "missing")); err == nil {
		t.Error("SyncDir of a missing directory succeeded")
	}
}

// TestReplace: Replace creates the directory and replaces the file whole
// with the mode asked, leaving no temporary file beside it.
func TestReplace(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	path := filepath.Join(dir, "r.json")
	for _, content := range []string{`{"a":1}`, `{"b":2}`} {
		if err := Replace(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(path)
		if err != nil || string(b) != content {
			t.Fatalf("read %q (%v), want %q", b, err, content)
		}
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v (%v), want 0600", fi.Mode(), err)
	}
	if entries, err := os.ReadDir(dir); err != nil || len(entries) != 1 {
		t.Errorf("directory holds %v (%v), want the file only", entries, err)
	}
}
