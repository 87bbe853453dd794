package exectest_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/railyard-io/railyard/internal/exectest"
)

// Scripts written while other goroutines fork and exec all the time run
// every time: with os.WriteFile in place of WriteScript this failed with
// "text file busy" within the first ten rounds on a 2-core machine.
func TestScriptsRunWhileOtherGoroutinesFork(t *testing.T) {
	dir := t.TempDir()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
					_ = exec.Command("true").Run()
				}
			}
		}()
	}
	defer func() { close(stop); wg.Wait() }()
	for i := range 300 {
		p := filepath.Join(dir, "s")
		_ = os.Remove(p)
		exectest.WriteScript(t, p, "echo ok\n")
		out, err := exec.Command(p).Output()
		if err != nil || string(out) != "ok\n" {
			t.Fatalf("round %d: %q, %v", i, out, err)
		}
	}
}

func TestWriteExecutableMode(t *testing.T) {
	p := filepath.Join(t.TempDir(), "x")
	exectest.WriteExecutable(t, p, []byte("data"))
	st, err := os.Stat(p)
	if err != nil || st.Mode().Perm() != 0o755 {
		t.Fatalf("stat = %v, %v; want mode 0755", st, err)
	}
	if b, _ := os.ReadFile(p); string(b) != "data" {
		t.Errorf("content %q", b)
	}
}
