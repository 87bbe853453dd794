package draplugin

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// The helper's metadata files are rewritten in place (the inode a
// container's bind mount holds); new files and CDI specs by rename.
func TestMetadataWriteFileKeepsTheInodeOfMetadataFiles(t *testing.T) {
	dir := t.TempDir()
	cdi := filepath.Join(dir, "cdi")
	meta := filepath.Join(dir, "plugin", "dra-device-metadata", "ns_claim", "nic0", "metadata.json")
	spec := filepath.Join(cdi, "k8s.rdma.railyard.io-metadata.json")
	write := metadataWriteFile(cdi)
	before := map[string]os.FileInfo{}
	for _, p := range []string{meta, spec} {
		if err := write(p, []byte(`{"generation":1,"a long first version":"to be cut"}`), 0o644); err != nil {
			t.Fatalf("first write of %s: %v", p, err)
		}
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		before[p] = fi
	}
	for _, p := range []string{meta, spec} {
		if err := write(p, []byte(`{"generation":2}`), 0o644); err != nil {
			t.Fatalf("rewrite of %s: %v", p, err)
		}
		b, err := os.ReadFile(p)
		if err != nil || string(b) != `{"generation":2}` {
			t.Errorf("%s after the rewrite: %q (%v)", p, b, err)
		}
		after, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if same, want := os.SameFile(before[p], after), p == meta; same != want {
			t.Errorf("%s: same inode after the rewrite %v, want %v", p, same, want)
		}
		if after.Mode().Perm() != 0o644 {
			t.Errorf("%s: mode %v", p, after.Mode())
		}
	}
}

// A metadata path that is a symlink or a FIFO is refused, at once, and
// nothing it points at is written.
func TestMetadataWriteFileRefusesWhatIsNoRegularFile(t *testing.T) {
	dir := t.TempDir()
	write := metadataWriteFile(filepath.Join(dir, "cdi"))
	outside := filepath.Join(dir, "outside")
	if err := os.WriteFile(outside, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.json")
	if err := os.Symlink(outside, link); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo.json")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{link, fifo} {
		done := make(chan error, 1)
		go func() { done <- write(p, []byte("{}"), 0o644) }()
		select {
		case err := <-done:
			if err == nil || errors.Is(err, os.ErrNotExist) {
				t.Errorf("%s: %v, want a refusal", p, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: the write blocked", p)
		}
	}
	if b, _ := os.ReadFile(outside); string(b) != "keep" {
		t.Errorf("the symlink's target was written: %q", b)
	}
}
