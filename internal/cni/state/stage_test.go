package state

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// TestStageIsInPlaceBeforeDurable: when Stage returns, the record is
// whole at its path (Get and Find see it, mode 0600, no temporary file
// left) before durable has run; durable runs once however many goroutines
// call it, and every caller gets its result.
func TestStageIsInPlaceBeforeDurable(t *testing.T) {
	t.Parallel()
	s := Store{Dir: t.TempDir()}
	r := &Record{Key: "0000:03:00.2", ContainerID: "c1", IfName: "net1", Phase: PhaseAdding, Config: []byte(`{"name":"n"}`)}
	durable, err := s.Stage(r)
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(r.Key)
	if err != nil || got.ContainerID != "c1" || got.Phase != PhaseAdding || string(got.Config) != `{"name":"n"}` {
		t.Fatalf("Get before durable = %+v, %v", got, err)
	}
	if f, err := s.Find("c1", "net1"); err != nil || f.Key != r.Key {
		t.Fatalf("Find before durable = %+v, %v", f, err)
	}
	fi, err := os.Stat(s.RecordPath(r.Key))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("record mode %v (%v), want 0600", fi.Mode(), err)
	}
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = durable() }()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatalf("durable: %v", err)
		}
	}
	entries, err := os.ReadDir(filepath.Join(s.Dir, "devices"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			t.Errorf("temporary file left: %s", e.Name())
		}
	}
	// A later Put replaces the staged record as usual.
	r.Phase = PhaseAttached
	if err := s.Put(r); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Get(r.Key); err != nil || got.Phase != PhaseAttached {
		t.Fatalf("Get after Put = %+v, %v", got, err)
	}
}

// TestStageFailsBeforeAnythingIsInPlace: a key that is not a file name, or
// a state directory that cannot be written, fails Stage itself (ADD then
// changes nothing) and leaves no record or temporary file.
func TestStageFailsBeforeAnythingIsInPlace(t *testing.T) {
	t.Parallel()
	s := Store{Dir: t.TempDir()}
	if _, err := s.Stage(&Record{Key: "../x"}); err == nil {
		t.Fatal("Stage of key ../x succeeded")
	}
	blocker := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(blocker, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	bad := Store{Dir: blocker} // devices/ cannot be created below a file
	if _, err := bad.Stage(&Record{Key: "0000:03:00.2"}); err == nil {
		t.Fatal("Stage below a regular file succeeded")
	}
	if _, err := s.Get("0000:03:00.2"); !errors.Is(err, ErrNoRecord) {
		t.Fatalf("Get = %v, want ErrNoRecord", err)
	}
}
