package archgraph

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/railyard-io/railyard/internal/atomicfile"
	"github.com/railyard-io/railyard/internal/inputfile"
)

// maxDoc bounds the document read.
const maxDoc = 1 << 20

// Run is hack/archgraph's main: it draws the graph of the module in the
// current directory and prints its block, or with -w writes it into the
// document. It fails when a package has no layer or a layer names a
// package that does not exist (after writing: the graph shows them).
func Run(args []string, out, errOut io.Writer) error {
	fs := flag.NewFlagSet("archgraph", flag.ContinueOnError)
	fs.SetOutput(errOut)
	write := fs.Bool("w", false, "write the graph into the document instead of printing it")
	doc := fs.String("doc", "docs/architecture.md", "the document holding the graph")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	module, pkgs, err := Load(".")
	if err != nil {
		return err
	}
	g := Build(module, pkgs, Layers)
	block := g.Diagrams()
	if *write {
		err = writeDoc(*doc, block)
	} else {
		_, err = fmt.Fprintln(out, block)
	}
	return errors.Join(err, g.Check())
}

func writeDoc(path, block string) error {
	old, err := inputfile.Read(path, maxDoc)
	if err != nil {
		return err
	}
	doc, err := Splice(old, block)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(path, doc, st.Mode().Perm())
}

// Check reports what the layer table misses: packages without a layer,
// layers that import each other, and exact patterns naming no package.
func (g Graph) Check() error {
	var errs []error
	if len(g.Unassigned) > 0 {
		errs = append(errs, fmt.Errorf("packages without a layer (add them to internal/archgraph/layers.go): %s", strings.Join(g.Unassigned, ", ")))
	}
	if g.LayerCycle != "" {
		errs = append(errs, fmt.Errorf("layers import each other (%s): a package is in the wrong layer, or the layers need a new one (internal/archgraph/layers.go)", g.LayerCycle))
	}
	if len(g.Unused) > 0 {
		errs = append(errs, fmt.Errorf("layers name packages that do not exist (remove them from internal/archgraph/layers.go): %s", strings.Join(g.Unused, ", ")))
	}
	return errors.Join(errs...)
}
