package binding

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/railyard-io/railyard/internal/inputfile"
)

// TestStoreFilesMustBeRegular puts a FIFO (a read blocked railyard-cni's
// ADD, and so sandbox creation, for ever) or a link to /dev/zero (read
// until memory ran out) where view.json and bindings.json belong: reading
// them fails at once with inputfile.ErrNotRegular.
func TestStoreFilesMustBeRegular(t *testing.T) {
	t.Parallel()
	for _, file := range []string{viewFile, bindingsFile} {
		for _, kind := range []string{"FIFO", "/dev/zero"} {
			t.Run(file+" "+kind, func(t *testing.T) {
				t.Parallel()
				dir := t.TempDir()
				p := filepath.Join(dir, file)
				var err error
				if kind == "FIFO" {
					err = unix.Mkfifo(p, 0o600)
				} else {
					err = os.Symlink("/dev/zero", p)
				}
				if err != nil {
					t.Fatal(err)
				}
				s := NewStore(dir, Options{})
				done := make(chan error, 1)
				go func() {
					if file == viewFile {
						_, err := s.View()
						done <- err
						return
					}
					_, err := s.Bindings()
					done <- err
				}()
				select {
				case err := <-done:
					if !errors.Is(err, inputfile.ErrNotRegular) {
						t.Errorf("err = %v, want inputfile.ErrNotRegular", err)
					}
				case <-time.After(30 * time.Second):
					t.Fatal("blocked reading the store (still blocked: the FIFO has no writer)")
				}
			})
		}
	}
}
