package iostreams

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

func TestExitErrorCarriesCodeAndReason(t *testing.T) {
	why := errors.New("the node has warnings")
	var err error = &ExitError{Code: 1, Err: why}
	var coded interface{ ExitCode() int } // what cmd/railyard looks for
	if !errors.As(err, &coded) || coded.ExitCode() != 1 {
		t.Errorf("exit code of %v: want 1", err)
	}
	if !errors.Is(err, why) || err.Error() != why.Error() {
		t.Errorf("error %q does not carry its reason", err)
	}
}

func TestIsTerminal(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	for name, out := range map[string]io.Writer{"buffer": &bytes.Buffer{}, "regular file": f, "/dev/null": null, "pipe": w} {
		if IsTerminal(out) {
			t.Errorf("%s is taken for a terminal", name)
		}
	}
	// A pseudo-terminal is one.
	ptmx, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal here: %v", err)
	}
	defer ptmx.Close()
	if !IsTerminal(ptmx) {
		t.Error("a pseudo-terminal is not taken for a terminal")
	}
}
