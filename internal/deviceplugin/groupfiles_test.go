package deviceplugin

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestGroupFilesRoundTripAndReadStrictly: a group written is read back as
// it was, through atomicfile (no temporary file stays beside it); a
// record with data after it, a key twice or one in another case, a record
// over its bound, and a FIFO in its place are errors, at once.
func TestGroupFilesRoundTripAndReadStrictly(t *testing.T) {
	dir := t.TempDir()
	f := groupFiles{dir: filepath.Join(dir, "nccl"), cdiDir: filepath.Join(dir, "cdi")}
	st := groupState{Group: "g1", Members: []groupMember{{Resource: "railyard.io/rdma_vf", Devices: []hcaDevice{{ID: "0000:18:00.2", RDMA: "mlx5_2"}}}}}
	conf, err := f.write(st, st.hcas())
	if err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(conf); err != nil || !strings.Contains(string(b), "NCCL_IB_HCA==mlx5_2") {
		t.Errorf("NCCL configuration %q: %v", b, err)
	}
	got, err := f.load("g1")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(st, got); diff != "" {
		t.Errorf("group read back (-want +got):\n%s", diff)
	}
	for _, d := range []string{f.dir, f.cdiDir} {
		left, _ := filepath.Glob(filepath.Join(d, ".*"))
		if len(left) > 0 {
			t.Errorf("temporary files left in %s: %v", d, left)
		}
	}

	for name, body := range map[string]string{
		"trailing data":  `{"group":"g2","members":[]}{"group":"g3"}`,
		"duplicate key":  `{"group":"g2","members":[],"members":[]}`,
		"miscased key":   `{"Group":"g2","members":[]}`,
		"over the bound": `{"group":"g2","members":[` + strings.Repeat(" ", maxGroupState) + `]}`,
	} {
		if err := os.WriteFile(f.statePath("g2"), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := f.load("g2"); err == nil {
			t.Errorf("%s: load accepted it", name)
		}
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Remove(f.statePath("g2")))
	must(syscall.Mkfifo(f.statePath("g2"), 0o644))
	start := time.Now()
	if _, err := f.load("g2"); err == nil || time.Since(start) > 5*time.Second {
		t.Errorf("a FIFO as group state: %v after %s, want an error at once", err, time.Since(start))
	}
}
