package sysfs

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// An attribute of exactly MaxAttrSize bytes is read whole; one byte more
// is an error, not a truncated value.
func TestReadStringSizeLimit(t *testing.T) {
	dir := t.TempDir()
	atLimit := strings.Repeat("a", MaxAttrSize-1) + "\n"
	if err := os.WriteFile(filepath.Join(dir, "page"), []byte(atLimit), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := New(dir).ReadString("page")
	if err != nil || len(got) != MaxAttrSize-1 {
		t.Fatalf("ReadString(page) = %d bytes, %v; want %d bytes", len(got), err, MaxAttrSize-1)
	}
	if err := os.WriteFile(filepath.Join(dir, "big"), []byte(atLimit+"b"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := New(dir).ReadString("big"); !errors.Is(err, ErrTooLarge) || got != "" {
		t.Fatalf("ReadString(big) = %d bytes, %v; want ErrTooLarge", len(got), err)
	}
}

// A 1 GiB sparse numa_node used to be read whole (and printed in a
// warning); now the read stops after one page.
func TestReadStringHugeSparseFile(t *testing.T) {
	dir := t.TempDir()
	f, err := os.Create(filepath.Join(dir, "numa_node"))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(1 << 30); err != nil {
		t.Fatal(err)
	}
	f.Close()
	_, err = New(dir).ReadInt("numa_node")
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("ReadInt = %v, want ErrTooLarge", err)
	}
	if len(err.Error()) > 200 {
		t.Errorf("error is %d bytes long: %.300s", len(err.Error()), err)
	}
}

// A FIFO, a character device (/dev/zero, below the root /dev: a link to
// it from another root is not followed) and a directory are no
// attributes: each fails at once with ErrNotRegular instead of blocking
// or reading forever.
func TestReadStringRejectsNonRegularFiles(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ root, name, kind string }{
		{dir, "fifo", "a FIFO"}, {"/dev", "zero", "a character device"}, {dir, "dir", "a directory"},
	} {
		root, name, kind := tc.root, tc.name, tc.kind
		done := make(chan error, 1)
		go func() {
			_, err := New(root).ReadString(name)
			done <- err
		}()
		select {
		case err := <-done:
			if !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), kind) {
				t.Errorf("ReadString(%s) = %v, want ErrNotRegular (%s)", name, err, kind)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("ReadString(%s) blocked", name)
		}
	}
	// A FIFO with a writer that never writes: still no block.
	w, err := os.OpenFile(filepath.Join(dir, "fifo"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := New(dir).ReadString("fifo"); !errors.Is(err, ErrNotRegular) {
		t.Errorf("ReadString(fifo with a writer) = %v, want ErrNotRegular", err)
	}
}

func TestPrintable(t *testing.T) {
	for in, want := range map[string]string{
		"mlx5_0":           "mlx5_0",
		"ens1f0np0":        "ens1f0np0",
		"netz\u00e4":       "netz\u00e4",
		"eth\x1b[31mred":   `eth\x1b[31mred`,
		"a\nb":             `a\x0ab`,
		"bad\xff\xfebytes": `bad\xff\xfebytes`,
		`back\slash`:       `back\\slash`,
		"zero\u200bwidth":  `zero\u200bwidth`,
		"":                 "",
	} {
		if got := Printable(in); got != want {
			t.Errorf("Printable(%q) = %q, want %q", in, got, want)
		}
		if got := NeedsEscape(in); got != (in != want) {
			t.Errorf("NeedsEscape(%q) = %v", in, got)
		}
	}
}

func TestQuoteIsBounded(t *testing.T) {
	if got := Quote("4: ACTIVE"); got != `"4: ACTIVE"` {
		t.Errorf("Quote = %s", got)
	}
	long := strings.Repeat("\xff", 10000)
	got := Quote(long)
	if len(got) > 300 || !strings.HasSuffix(got, "... (10000 bytes)") || !strings.HasPrefix(got, `"\xff`) {
		t.Errorf("Quote(10000 bytes) = %s", got)
	}
	// A cut never splits a multi-byte rune.
	got = Quote(strings.Repeat("\u00e4", 100))
	if strings.Contains(got, `\x`) {
		t.Errorf("Quote split a rune: %s", got)
	}
}

// Values read from sysfs end up in warnings: whatever they hold, the
// messages are short and printable.
func FuzzQuotePrintable(f *testing.F) {
	for _, s := range []string{"", "mlx5_0", "eth\x1b[31m", "\xff\xfe", strings.Repeat("x", 200), `a\b`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		q := Quote(s)
		if len(q) > 4*maxQuoted+40 {
			t.Fatalf("Quote(%d bytes) is %d bytes", len(s), len(q))
		}
		p := Printable(s)
		if NeedsEscape(p) && !strings.Contains(p, `\`) {
			t.Fatalf("Printable(%q) = %q is not printable", s, p)
		}
		for _, r := range p {
			if r < 0x20 || r == 0x7f {
				t.Fatalf("Printable(%q) = %q has a control character", s, p)
			}
		}
		if !NeedsEscape(s) && p != s {
			t.Fatalf("Printable changed %q to %q", s, p)
		}
	})
}

func TestClip(t *testing.T) {
	if got := Clip(`port 1: "4: ACT\xffIVE"`, 100); got != `port 1: "4: ACT\xffIVE"` {
		t.Errorf("Clip kept backslashes badly: %s", got)
	}
	if got := Clip("eth\x1b[31m down", 100); got != `eth\x1b[31m down` {
		t.Errorf("Clip = %q", got)
	}
	got := Clip(strings.Repeat("\x00", 1<<20), 64)
	if len(got) > 100 || !strings.HasSuffix(got, "... (1048576 bytes in all)") || strings.ContainsRune(got, 0) {
		t.Errorf("Clip(1 MiB of NUL) = %q", got)
	}
}
