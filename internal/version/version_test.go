package version

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestDefaultsWithoutLinkerFlags(t *testing.T) {
	if Version() != "dev" || Revision() != "unknown" || String() != "dev (unknown)" {
		t.Fatalf("got %q %q %q", Version(), Revision(), String())
	}
}

// TestLinkerFlagsSetVersionAndRevision builds a tiny program with the -X
// flags internal/image uses and checks what it prints: a renamed variable
// would make -X silently do nothing.
func TestLinkerFlagsSetVersionAndRevision(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a program")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "v")
	const pkg = "github.com/railyard-io/railyard/internal/version"
	ldflags := "-X " + pkg + ".version=1.2.3 -X " + pkg + ".revision=abc123"
	build := exec.Command("go", "build", "-o", bin, "-ldflags", ldflags, "./testdata/printversion")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin).Output()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(string(out)); got != "1.2.3 (abc123)" {
		t.Fatalf("printed %q, want %q", got, "1.2.3 (abc123)")
	}
}
