package archgraph

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
)

// Tags are the build tags the graph is drawn with: the default build and
// the end-to-end suite's files.
const Tags = "e2e"

// Load lists the packages of the module in dir (its root) with `go list`,
// with Tags set, and returns the module path and its packages.
func Load(dir string) (string, []Package, error) {
	mod := exec.Command("go", "list", "-m")
	mod.Dir = dir
	out, err := mod.Output()
	if err != nil {
		return "", nil, fmt.Errorf("go list -m: %w", err)
	}
	list := exec.Command("go", "list", "-tags", Tags, "-json=ImportPath,Imports", "./...")
	list.Dir = dir
	js, err := list.Output()
	if err != nil {
		return "", nil, fmt.Errorf("go list: %w", err)
	}
	pkgs, err := Decode(bytes.NewReader(js))
	if err != nil {
		return "", nil, err
	}
	return string(bytes.TrimSpace(out)), pkgs, nil
}

// Decode reads the stream of JSON objects `go list -json` prints.
func Decode(r io.Reader) ([]Package, error) {
	var pkgs []Package
	dec := json.NewDecoder(r)
	for {
		var p Package
		err := dec.Decode(&p)
		if errors.Is(err, io.EOF) {
			return pkgs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("go list output: %w", err)
		}
		pkgs = append(pkgs, p)
	}
}
