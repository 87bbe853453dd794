package topo

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBindingsFlag: --bindings prints the store's late bindings after
// the topology (an empty store says so); a corrupt store fails.
func TestBindingsFlag(t *testing.T) {
	dir := t.TempDir()
	out, _, err := run(t, "--machine", "roce-8gpu-4nic", "--bindings", dir)
	if err != nil || !strings.Contains(out, "Late bindings ("+dir+"): 0") {
		t.Errorf("output lacks the empty bindings section (%v):\n%s", err, out)
	}
	if err := os.WriteFile(filepath.Join(dir, "bindings.json"), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := run(t, "--machine", "roce-8gpu-4nic", "--bindings", dir); err == nil {
		t.Error("corrupt bindings file: no error")
	}
}

// A missing binding store, or a file in its place, is an error: the store
// reads a missing bindings file as "no bindings", which printed "0".
func TestBindingsFlagNeedsAStoreDirectory(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ path, want string }{
		{filepath.Join(dir, "missing"), "no such file or directory"},
		{file, "not a directory (a regular file)"},
	} {
		out, _, err := run(t, "--machine", "roce-8gpu-4nic", "--bindings", tc.path)
		if err == nil || !strings.Contains(err.Error(), "--bindings") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("--bindings %s: err %v, want --bindings ... %s", tc.path, err, tc.want)
		}
		if strings.Contains(out, "Late bindings") {
			t.Errorf("--bindings %s printed a bindings section:\n%s", tc.path, out)
		}
	}
}
