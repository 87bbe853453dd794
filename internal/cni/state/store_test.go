package state

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/railyard-io/railyard/internal/cni/state/statetest"
)

func TestPutGetListFindDelete(t *testing.T) {
	t.Parallel()
	s := Store{Dir: t.TempDir()}
	if _, err := s.Get("0000:03:00.2"); !errors.Is(err, ErrNoRecord) {
		t.Fatalf("Get on empty store: %v", err)
	}
	a := &Record{Key: "0000:03:00.2", ContainerID: "c1", IfName: "net1", Phase: PhaseAdding}
	b := &Record{Key: "0000:03:00.3", ContainerID: "c2", IfName: "net1", Phase: PhaseAttached}
	for _, r := range []*Record{b, a} {
		if err := s.Put(r); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.Get(a.Key)
	if err != nil || got.ContainerID != "c1" || got.Phase != PhaseAdding {
		t.Fatalf("Get = %+v, %v", got, err)
	}
	all, err := s.List()
	if err != nil || len(all) != 2 || all[0].Key != a.Key {
		t.Fatalf("List = %v, %v", all, err)
	}
	r, err := s.Find("c2", "net1")
	if err != nil || r.Key != b.Key {
		t.Fatalf("Find = %+v, %v", r, err)
	}
	if _, err := s.Find("c3", "net1"); !errors.Is(err, ErrNoRecord) {
		t.Fatalf("Find unknown: %v", err)
	}
	if err := s.Delete(a.Key); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(a.Key); err != nil {
		t.Fatalf("second Delete: %v", err)
	}
	if _, err := s.Get(a.Key); !errors.Is(err, ErrNoRecord) {
		t.Fatalf("Get after Delete: %v", err)
	}
	leftovers, _ := filepath.Glob(filepath.Join(s.Dir, "devices", ".tmp-*"))
	if len(leftovers) != 0 {
		t.Fatalf("temporary files left: %v", leftovers)
	}
}

func TestListSkipsCorruptRecords(t *testing.T) {
	t.Parallel()
	s := Store{Dir: t.TempDir()}
	if err := s.Put(&Record{Key: "good"}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(s.Dir, "devices", "bad.json"), []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	recs, err := s.List()
	if err == nil || len(recs) != 1 || recs[0].Key != "good" {
		t.Fatalf("List = %v, %v; want the good record and an error", recs, err)
	}
}

func TestInvalidKeys(t *testing.T) {
	t.Parallel()
	s := Store{Dir: t.TempDir()}
	for _, k := range []string{"", "..", "a/b", "x\x00"} {
		if err := s.Put(&Record{Key: k}); err == nil {
			t.Errorf("Put accepted key %q", k)
		}
		if _, err := s.Lock(context.Background(), k, 0); err == nil {
			t.Errorf("Lock accepted key %q", k)
		}
	}
}

func TestLockExcludesAndTimesOut(t *testing.T) {
	t.Parallel()
	s := Store{Dir: t.TempDir()}
	ctx := context.Background()
	unlock, err := s.Lock(ctx, "dev", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := s.Lock(ctx, "dev", 50*time.Millisecond); !errors.Is(err, ErrBusy) {
		t.Fatalf("second Lock: %v, want ErrBusy", err)
	}
	if time.Since(start) < 50*time.Millisecond {
		t.Fatal("second Lock gave up before its timeout")
	}
	other, err := s.Lock(ctx, "other-dev", 0)
	if err != nil {
		t.Fatalf("lock of another device: %v", err)
	}
	other()
	unlock()
	again, err := s.Lock(ctx, "dev", 0)
	if err != nil {
		t.Fatalf("Lock after unlock: %v", err)
	}
	again()
}

func TestLockSerialises(t *testing.T) {
	t.Parallel()
	s := Store{Dir: t.TempDir()}
	var inside, maxInside atomic.Int32
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			unlock, err := s.Lock(context.Background(), "dev", 5*time.Second)
			if err != nil {
				t.Error(err)
				return
			}
			n := inside.Add(1)
			if n > maxInside.Load() {
				maxInside.Store(n)
			}
			time.Sleep(2 * time.Millisecond)
			inside.Add(-1)
			unlock()
		}()
	}
	wg.Wait()
	if maxInside.Load() != 1 {
		t.Fatalf("%d holders at once", maxInside.Load())
	}
}

func TestLockHonoursContext(t *testing.T) {
	t.Parallel()
	s := Store{Dir: t.TempDir()}
	unlock, err := s.Lock(context.Background(), "dev", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Lock(ctx, "dev", time.Minute); !errors.Is(err, context.Canceled) {
		t.Fatalf("Lock with cancelled ctx: %v", err)
	}
}

// TestGetReportsCorruptRecords: an empty, cut, or misnamed record, or
// something else than a regular file in its place, is ErrCorrupt (the
// plugin then treats it as stale), and reading it never blocks.
func TestGetReportsCorruptRecords(t *testing.T) {
	t.Parallel()
	s := Store{Dir: t.TempDir()}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(s.Dir, "devices"), 0o700))
	for key, content := range map[string]string{"empty": "", "cut": `{"key":"cut","contai`, "other": `{"key":"another"}`, "null": "null"} {
		must(os.WriteFile(s.recordPath(key), []byte(content), 0o600))
	}
	must(syscall.Mkfifo(s.recordPath("fifo"), 0o600))
	for _, key := range []string{"empty", "cut", "other", "null", "fifo"} {
		if _, err := s.Get(key); !errors.Is(err, ErrCorrupt) {
			t.Errorf("Get(%s) = %v, want ErrCorrupt", key, err)
		}
	}
	must(s.Put(&Record{Key: "good"}))
	recs, corrupt, err := s.ListAll()
	if err != nil || len(recs) != 1 || recs[0].Key != "good" {
		t.Fatalf("ListAll = %v, %v", recs, err)
	}
	if diff := cmp.Diff([]string{"cut", "empty", "fifo", "null", "other"}, corrupt); diff != "" {
		t.Errorf("corrupt keys (-want +got):\n%s", diff)
	}
}

// TestPutLeavesNoTemporaryFiles: Put goes through a temporary file and a
// rename (atomicfile: fsync of the file and of the directory), and leaves
// only the record.
func TestPutLeavesNoTemporaryFiles(t *testing.T) {
	t.Parallel()
	s := Store{Dir: t.TempDir()}
	for i := range 3 {
		if err := s.Put(&Record{Key: "dev", Phase: PhaseAdding, IfName: string(rune('a' + i))}); err != nil {
			t.Fatal(err)
		}
	}
	entries, err := os.ReadDir(filepath.Join(s.Dir, "devices"))
	if err != nil || len(entries) != 1 || entries[0].Name() != "dev.json" {
		t.Fatalf("devices/ = %v, %v; want dev.json only", entries, err)
	}
}

// TestLockFileGoesWithTheRecord: a lock released while its device has no
// record takes its file with it (100 DELs of unknown devices left 100 lock
// files); one with a record keeps it.
func TestLockFileGoesWithTheRecord(t *testing.T) {
	t.Parallel()
	s := Store{Dir: t.TempDir()}
	ctx := context.Background()
	for i := range 100 {
		unlock, err := s.Lock(ctx, "dev"+string(rune('0'+i%10))+string(rune('0'+i/10)), 0)
		if err != nil {
			t.Fatal(err)
		}
		unlock()
	}
	if left, _ := filepath.Glob(filepath.Join(s.Dir, "locks", "*")); len(left) != 0 {
		t.Fatalf("lock files left: %v", left)
	}
	if err := s.Put(&Record{Key: "held"}); err != nil {
		t.Fatal(err)
	}
	unlock, err := s.Lock(ctx, "held", 0)
	if err != nil {
		t.Fatal(err)
	}
	unlock()
	if !s.HasLock("held") {
		t.Fatal("the lock file of a device with a record is gone")
	}
	if err := s.Delete("held"); err != nil {
		t.Fatal(err)
	}
	unlock, err = s.Lock(ctx, "held", 0)
	if err != nil {
		t.Fatal(err)
	}
	unlock()
	if s.HasLock("held") {
		t.Fatal("the lock file of a released device stays")
	}
}

// TestLockSerialisesWhileFilesComeAndGo: holders that remove the lock
// file on release (no record) never let two in at once: a waiter that
// gets the lock of a removed file tries again on the path's new file.
func TestLockSerialisesWhileFilesComeAndGo(t *testing.T) {
	t.Parallel()
	s := Store{Dir: t.TempDir()}
	var inside, maxInside atomic.Int32
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 30 {
				unlock, err := s.Lock(context.Background(), "dev", 10*time.Second)
				if err != nil {
					t.Error(err)
					return
				}
				if n := inside.Add(1); n > maxInside.Load() {
					maxInside.Store(n)
				}
				time.Sleep(100 * time.Microsecond)
				inside.Add(-1)
				unlock()
			}
		}()
	}
	wg.Wait()
	if maxInside.Load() != 1 {
		t.Fatalf("%d holders at once", maxInside.Load())
	}
}

// TestLockOnAReadOnlyStateDirReadOnlyMount: an existing lock file on a
// read-only state directory is locked (opened read-only; flock needs no
// write access). Needs root for the read-only bind mount.
func TestLockOnAReadOnlyStateDirReadOnlyMount(t *testing.T) {
	t.Parallel()
	s := Store{Dir: t.TempDir()}
	if err := s.Put(&Record{Key: "dev"}); err != nil {
		t.Fatal(err)
	}
	unlock, err := s.Lock(context.Background(), "dev", 0)
	if err != nil {
		t.Fatal(err)
	}
	unlock()
	statetest.ReadOnly(t, s.Dir)
	unlock, err = s.Lock(context.Background(), "dev", 0)
	if err != nil {
		t.Fatalf("Lock on a read-only state directory: %v", err)
	}
	unlock()
	if _, err := s.Get("dev"); err != nil {
		t.Fatalf("Get on a read-only state directory: %v", err)
	}
}

// TestRecordsWithoutPodDecode: a record written before railyard-cni
// recorded the pod (no "pod" key) decodes with Pod nil and its GID; one
// with it decodes it.
func TestRecordsWithoutPodDecode(t *testing.T) {
	s := Store{Dir: t.TempDir()}
	old := `{"key":"0000:03:00.2","network":"rail0","containerID":"c1","ifname":"net1","netns":"/var/run/netns/p","bootID":"b","phase":"attached",` +
		`"pci":"0000:03:00.2","tempName":"ry0","marker":"m","orig":{"name":"ens1f0v0","index":7},"rdma":"mlx5_3",` +
		`"gid":{"hca":"mlx5_3","netdev":"net1","addr":"192.168.50.10","port":1,"index":3},"config":{}}`
	withPod := strings.Replace(strings.Replace(old, "0000:03:00.2", "0000:03:00.3", 2), `"config":{}`,
		`"pod":{"namespace":"ml","name":"trainer-0","uid":"u1"},"config":{}`, 1)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(s.Dir, "devices"), 0o700))
	must(os.WriteFile(s.RecordPath("0000:03:00.2"), []byte(old), 0o600))
	must(os.WriteFile(s.RecordPath("0000:03:00.3"), []byte(withPod), 0o600))
	recs, err := s.List()
	must(err)
	if len(recs) != 2 {
		t.Fatalf("%d records, want 2", len(recs))
	}
	if recs[0].Pod != nil || recs[0].GID == nil || recs[0].GID.Index != 3 {
		t.Errorf("old record: pod %+v, gid %+v; want none and index 3", recs[0].Pod, recs[0].GID)
	}
	if p := recs[1].Pod; p == nil || *p != (PodRef{Namespace: "ml", Name: "trainer-0", UID: "u1"}) {
		t.Errorf("new record's pod %+v", p)
	}
}

// TestAdvanceReplacesTheStagedRecordWhole: Advance puts the later version
// in place of the staged record, whole, and leaves no temporary file; a
// key that is not a file name is refused.
func TestAdvanceReplacesTheStagedRecordWhole(t *testing.T) {
	t.Parallel()
	s := Store{Dir: t.TempDir()}
	r := &Record{Key: "0000:03:00.2", ContainerID: "c1", IfName: "net1", Phase: PhaseAdding, Config: []byte(`{"name":"n"}`)}
	durable, err := s.Stage(r)
	if err != nil {
		t.Fatal(err)
	}
	if err := durable(); err != nil {
		t.Fatal(err)
	}
	next := *r
	next.Phase, next.Result = PhaseAttached, []byte(`{"cniVersion":"1.1.0"}`)
	if err := s.Advance(&next); err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(r.Key)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(&next, got); diff != "" {
		t.Fatalf("record after Advance (-want +got):\n%s", diff)
	}
	entries, err := os.ReadDir(filepath.Join(s.Dir, "devices"))
	if err != nil || len(entries) != 1 {
		t.Fatalf("devices/ after Advance: %v, %v; want the record only", entries, err)
	}
	if err := s.Advance(&Record{Key: "../x"}); err == nil {
		t.Fatal("Advance of key ../x succeeded")
	}
}
