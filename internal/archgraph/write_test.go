package archgraph

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestWriteDocReplacesTheBlockAndKeepsTheMode(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "architecture.md")
	if err := os.WriteFile(path, []byte("# A\n"+Block("old\n")+"\nrest\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := writeDoc(path, Block("new\n")); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff("# A\n"+Block("new\n")+"\nrest\n", string(got)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o640 {
		t.Errorf("mode %v, want 0640", st.Mode().Perm())
	}
}

func TestWriteDocLeavesADocumentWithoutABlock(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "architecture.md")
	if err := os.WriteFile(path, []byte("# A\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := writeDoc(path, Block("new\n")); !errors.Is(err, ErrNoBlock) {
		t.Errorf("writeDoc = %v, want ErrNoBlock", err)
	}
	if got, _ := os.ReadFile(path); string(got) != "# A\n" {
		t.Errorf("document changed to %q", got)
	}
}
