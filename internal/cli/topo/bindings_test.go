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
