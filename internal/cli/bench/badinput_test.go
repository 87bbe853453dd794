package bench

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

const infRow = ` #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]
 65536      1000     inf     91.2      0.17
 1048576    1000     92.1     91.8      inf
 2097152    1000     92.1     91.9      0.005
`

// A perftest row with "inf" used to make bench parse --json print nothing
// at all (for every file): the infinite value could not be marshalled.
// Such a cell is no measurement: the row is dropped, the others print.
func TestParseJSONWithInfinity(t *testing.T) {
	inf := filepath.Join(t.TempDir(), "inf.txt")
	if err := os.WriteFile(inf, []byte(infRow), 0o644); err != nil {
		t.Fatal(err)
	}
	out, _, err := run(t, "", "parse", "--json", vectorFile(t, roceBW), inf)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(strings.NewReader(out))
	var docs []map[string]any
	for dec.More() {
		var v map[string]any
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		docs = append(docs, v)
	}
	if len(docs) != 2 {
		t.Fatalf("%d documents, want 2:\n%s", len(docs), out)
	}
	rows, _ := docs[1]["rows"].([]any)
	if len(rows) != 1 {
		t.Errorf("inf.txt: %d rows, want the one finite row: %v", len(rows), docs[1])
	}
}

// Non-finite thresholds and line rates used to pass validation and print
// "NaN% of NaN Gb/s".
func TestReportRejectsNonFiniteFlags(t *testing.T) {
	f := vectorFile(t, roceBW)
	for _, tc := range []struct{ flag, value, want string }{
		{"--line-rate-gbps", "NaN", "--line-rate-gbps NaN: want 0 (unknown) to 1e+06"},
		{"--line-rate-gbps", "+Inf", "--line-rate-gbps +Inf"},
		{"--pass-line-rate", "NaN", "--pass-line-rate NaN: want a fraction in (0, 1]"},
		{"--pass-nccl", "NaN", "--pass-nccl NaN"},
		{"--pass-gpudirect-line-rate", "NaN", "--pass-gpudirect-line-rate NaN: want a fraction in (0, 1]"},
		{"--pass-gpudirect-line-rate", "1.5", "--pass-gpudirect-line-rate 1.5"},
		{"--min-speedup", "NaN", "--min-speedup NaN: want a number in (0, 1e+06]"},
		{"--min-speedup", "Inf", "--min-speedup +Inf"},
		{"--pod-tolerance", "NaN", "--pod-tolerance NaN: want a fraction in [0, 1)"},
		{"--nics", "100000", "--nics 100000"},
	} {
		out := filepath.Join(t.TempDir(), "report")
		stdout, _, err := run(t, "", "report", "--result", "rdma="+f, tc.flag, tc.value, "--out", out)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s %s: err = %v, want %q", tc.flag, tc.value, err, tc.want)
		}
		if strings.Contains(stdout, "NaN") {
			t.Errorf("%s %s printed NaN:\n%s", tc.flag, tc.value, stdout)
		}
		if _, err := os.Stat(out); !os.IsNotExist(err) {
			t.Errorf("%s %s: report directory exists (%v)", tc.flag, tc.value, err)
		}
	}
}

// A report that cannot be written leaves nothing behind: here report.html
// is a directory in the existing output directory, and none of the other
// files (charts, report.json) appear.
func TestReportFailureLeavesNothingPartial(t *testing.T) {
	out := t.TempDir()
	if err := os.Mkdir(filepath.Join(out, "report.html"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, _, err := run(t, "", "report", "--result", "rdma="+vectorFile(t, roceBW), "--line-rate-gbps", "100", "--out", out)
	if err == nil || !strings.Contains(err.Error(), "is a directory") {
		t.Fatalf("err = %v", err)
	}
	entries, _ := os.ReadDir(out)
	if len(entries) != 1 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("output dir holds %v, want only the report.html directory", names)
	}
}

// bench plan refuses image references and resource names that must not
// reach a pod spec.
func TestPlanRefusesBadImagesAndResources(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"--image", "img with spaces"},
		{"--image", "ghcr.io/x/$(id):1"},
		{"--image", "ghcr.io/x/y:1\nrm -rf /"},
		{"--image", "ghcr.io/x/y:1", "--resource", "kubernetes.io/rdma"},
	} {
		_, _, err := run(t, "", append([]string{"plan", "--nodes", "a,b", "--tests", "perftest"}, args...)...)
		if err == nil || !(strings.Contains(err.Error(), "not an image reference") || strings.Contains(err.Error(), "kubernetes.io domain")) {
			t.Errorf("plan %q: err = %v, want it refused", args, err)
		}
	}
}

// A FIFO given as an output to parse, a report's result or a plan fails at
// once instead of blocking (files go through internal/inputfile).
func TestFIFOInputsFailAtOnce(t *testing.T) {
	t.Parallel()
	fifo := filepath.Join(t.TempDir(), "log.txt")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"parse", fifo},
		{"report", "--result", "rdma=" + fifo, "--out", t.TempDir()},
		{"run", "-f", fifo},
	} {
		done := make(chan error, 1)
		go func() {
			_, _, err := run(t, "", args...)
			done <- err
		}()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), "not a regular file (a FIFO)") {
				t.Errorf("%q: err = %v, want not a regular file (a FIFO)", args, err)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("%q hangs on a FIFO", args)
		}
	}
}
