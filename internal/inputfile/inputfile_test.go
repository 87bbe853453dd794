package inputfile

import (
	"bytes"
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestRead(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	regular := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(regular, []byte("12345"), 0o644); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	link := filepath.Join(dir, "link")
	if err := os.Symlink(regular, link); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name    string
		path    string
		max     int64
		want    string
		wantErr error
		inErr   string
	}{
		{name: "regular file within the limit", path: regular, max: 5, want: "12345"},
		{name: "a symlink to a regular file is read", path: link, max: 100, want: "12345"},
		{name: "one byte over the limit", path: regular, max: 4, wantErr: ErrTooLarge, inErr: "more than 4 bytes"},
		{name: "a FIFO fails at once", path: fifo, max: 100, wantErr: ErrNotRegular, inErr: "a FIFO"},
		{name: "/dev/zero is refused", path: "/dev/zero", max: 100, wantErr: ErrNotRegular, inErr: "a character device"},
		{name: "a directory is refused", path: dir, max: 100, wantErr: ErrNotRegular, inErr: "a directory"},
		{name: "a socket is refused", path: sock, max: 100, wantErr: fs.ErrNotExist}, // open(2) of a socket: ENXIO
		{name: "missing file keeps ErrNotExist", path: filepath.Join(dir, "missing"), max: 100, wantErr: fs.ErrNotExist},
	} {
		t.Run(tc.name, func(t *testing.T) {
			done := make(chan struct{})
			var got []byte
			var err error
			go func() {
				defer close(done)
				got, err = Read(tc.path, tc.max)
			}()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatalf("Read(%s) blocked", tc.path)
			}
			if tc.name == "a socket is refused" {
				if err == nil {
					t.Fatalf("Read(socket) = %q, want an error", got)
				}
				return
			}
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("Read(%s) error = %v, want %v", tc.path, err, tc.wantErr)
				}
				if !strings.Contains(err.Error(), tc.path) || !strings.Contains(err.Error(), tc.inErr) {
					t.Fatalf("Read(%s) error %q does not name the path and %q", tc.path, err, tc.inErr)
				}
				return
			}
			if err != nil || string(got) != tc.want {
				t.Fatalf("Read(%s) = %q, %v; want %q", tc.path, got, err, tc.want)
			}
		})
	}
}

func TestReadLimited(t *testing.T) {
	t.Parallel()
	if b, err := ReadLimited(bytes.NewReader(make([]byte, 10)), 10); err != nil || len(b) != 10 {
		t.Fatalf("exactly the limit: %d bytes, %v", len(b), err)
	}
	if _, err := ReadLimited(bytes.NewReader(make([]byte, 11)), 10); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("one past the limit: %v, want ErrTooLarge", err)
	}
	// An endless reader stops one byte past the limit.
	f, err := os.Open("/dev/zero")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := ReadLimited(f, 1<<20); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("/dev/zero as a stream: %v, want ErrTooLarge", err)
	}
}
