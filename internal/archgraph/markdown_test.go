package archgraph

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSpliceReplacesOnlyTheBlock(t *testing.T) {
	t.Parallel()
	doc := "# Title\n\n" + Block("flowchart TB\n  old\n") + "\n\ntext after\n"
	got, err := Splice([]byte(doc), Block("flowchart TB\n  new\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := "# Title\n\n" + Begin + "\n```mermaid\nflowchart TB\n  new\n```\n" + End + "\n\ntext after\n"
	if diff := cmp.Diff(want, string(got)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestSpliceRefusesDocumentsWithoutOneBlock(t *testing.T) {
	t.Parallel()
	for name, doc := range map[string]string{
		"none":     "# Title\n",
		"no end":   Begin + "\n",
		"no begin": End + "\n",
		"two":      Block("a\n") + Block("b\n"),
		"reversed": End + "\n" + Begin + "\n",
	} {
		if _, err := Splice([]byte(doc), Block("x\n")); !errors.Is(err, ErrNoBlock) {
			t.Errorf("%s: Splice error = %v, want ErrNoBlock", name, err)
		}
		if _, err := Extract([]byte(doc)); !errors.Is(err, ErrNoBlock) {
			t.Errorf("%s: Extract error = %v, want ErrNoBlock", name, err)
		}
	}
}

func FuzzSplice(f *testing.F) {
	f.Add("# t\n"+Block("flowchart TB\n")+"\n", "flowchart TB\n  a --> b\n")
	f.Add(End+Begin, "")
	f.Add("", "x")
	f.Fuzz(func(t *testing.T, doc, mermaid string) {
		block := Block(mermaid)
		out, err := Splice([]byte(doc), block)
		if err != nil {
			return
		}
		if strings.Count(mermaid, Begin)+strings.Count(mermaid, End) > 0 {
			return // a graph spelling the markers makes a document with two
		}
		got, err := Extract(out)
		if err != nil {
			t.Fatalf("Extract after Splice: %v", err)
		}
		if got != block {
			t.Fatalf("Extract after Splice = %q, want %q", got, block)
		}
	})
}
