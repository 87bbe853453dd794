package topo

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/railyard-io/railyard/internal/fakesysfs"
	"github.com/railyard-io/railyard/machines"
)

func writeTree(t *testing.T, model string) string {
	t.Helper()
	dir, err := fakesysfs.MkdirTemp()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fakesysfs.Cleanup(dir) })
	if err := machines.WriteSysfs(model, dir, 0); err != nil {
		t.Fatal(err)
	}
	return dir
}

// A FIFO as a port's state and as a NIC's vendor used to hang topo
// forever; now each is a warning and topo prints the rest.
func TestFIFOAttributesAreWarnings(t *testing.T) {
	dir := writeTree(t, "dgx-1")
	for _, rel := range []string{"class/infiniband/mlx5_1/ports/1/state", "bus/pci/devices/0000:05:00.0/numa_node"} {
		p := filepath.Join(dir, rel)
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
		if err := syscall.Mkfifo(p, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out, _, err := run(t, "--sysfs", dir)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(out, "not a regular file (a FIFO)"); n != 2 {
		t.Errorf("%d FIFO warnings, want 2:\n%s", n, out)
	}
}

// Names with control characters or invalid UTF-8 are printed escaped,
// never raw: an escape sequence in a netdev name cannot recolour or move
// the terminal.
func TestNamesArePrintedEscaped(t *testing.T) {
	dir := writeTree(t, "dgx-1")
	net := filepath.Join(dir, "bus/pci/devices/0000:05:00.0/net")
	entries, err := os.ReadDir(net)
	if err != nil || len(entries) == 0 {
		t.Fatalf("no netdev: %v", err)
	}
	if err := os.Rename(filepath.Join(net, entries[0].Name()), filepath.Join(net, "ib\x1b[2J\xff")); err != nil {
		t.Fatal(err)
	}
	out, _, err := run(t, "--sysfs", dir)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out, "\x1b") || strings.Contains(out, "\xff") {
		t.Errorf("raw bytes in the output:\n%q", out)
	}
	if !strings.Contains(out, `ib\x1b[2J\xff`) {
		t.Errorf("escaped name missing:\n%s", out)
	}
	if !strings.Contains(out, `netdev name "ib\x1b[2J\xff" has control characters`) {
		t.Errorf("no warning about the name:\n%s", out)
	}
	js, _, err := run(t, "--sysfs", dir, "--json")
	if err != nil {
		t.Fatal(err)
	}
	var v jsonView
	if err := json.Unmarshal([]byte(js), &v); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, w := range v.Warnings {
		found = found || strings.Contains(w, `JSON shows invalid bytes as U+FFFD`)
	}
	if !found {
		t.Errorf("JSON warnings do not say the name is altered: %v", v.Warnings)
	}
}
