package draview_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/railyard-io/railyard/internal/draview"
)

func TestStatusRecordsRoundTripAndStayBeneathTheirDirectory(t *testing.T) {
	dir := t.TempDir()
	if sts, err := draview.ReadStatuses(dir); err != nil || len(sts) != 0 {
		t.Fatalf("no directory: %v, %v", sts, err)
	}
	want := draview.DeviceStatus{ClaimUID: "c1", PCI: "0000:18:00.2", ContainerID: "abc123", IfName: "net1", MAC: "02:00:00:00:00:01", IPs: []string{"10.1.0.5/24", "fd00::5/64"}}
	if err := draview.WriteStatus(dir, want); err != nil {
		t.Fatal(err)
	}
	got, err := draview.ReadStatuses(dir)
	want.Version = 1
	if err != nil || len(got) != 1 {
		t.Fatalf("read back: %v, %v", got, err)
	}
	if d := cmp.Diff(want, got[0]); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
	// Names that would leave the directory, and bad content, are refused.
	for _, bad := range []draview.DeviceStatus{
		{ClaimUID: "c1", PCI: "0000:18:00.2", ContainerID: "../../etc", IfName: "net1"},
		{ClaimUID: "c1", PCI: "0000:18:00.2", ContainerID: "abc", IfName: "a/b"},
		{ClaimUID: "c1", PCI: "0000:18:00.2", ContainerID: "a..b", IfName: "net1"},
		{ClaimUID: "", PCI: "0000:18:00.2", ContainerID: "abc", IfName: "net1"},
		{ClaimUID: "c1", PCI: "not-pci", ContainerID: "abc", IfName: "net1"},
		{ClaimUID: "c1", PCI: "0000:18:00.2", ContainerID: "abc", IfName: "net1", IPs: []string{"10.1.0.5"}},
		{ClaimUID: "c1", PCI: "0000:18:00.2", ContainerID: "abc", IfName: "net1", MAC: "zz"},
	} {
		if err := draview.WriteStatus(dir, bad); err == nil {
			t.Errorf("WriteStatus(%+v) succeeded", bad)
		}
	}
	victim := filepath.Join(t.TempDir(), "victim_net1.json")
	must(t, os.WriteFile(victim, []byte("x"), 0o644))
	must(t, draview.RemoveStatus(dir, "../../"+filepath.Base(filepath.Dir(victim))+"/victim", "net1"))
	if _, err := os.Stat(victim); err != nil {
		t.Errorf("RemoveStatus reached outside its directory: %v", err)
	}
	must(t, draview.RemoveStatus(dir, "abc123", "net1"))
	must(t, draview.RemoveStatus(dir, "abc123", "net1")) // none: nothing to do
	if got, err := draview.ReadStatuses(dir); err != nil || len(got) != 0 {
		t.Errorf("after remove: %v, %v", got, err)
	}
}

// One bad record (garbled, misnamed, a FIFO) is reported and skipped; the
// good ones are still read, and reading never blocks.
func TestBadStatusRecordsDoNotHideTheOthers(t *testing.T) {
	dir := t.TempDir()
	good := draview.DeviceStatus{ClaimUID: "c1", PCI: "0000:18:00.2", ContainerID: "abc", IfName: "net1"}
	must(t, draview.WriteStatus(dir, good))
	sd := filepath.Join(dir, draview.StatusDir)
	must(t, os.WriteFile(filepath.Join(sd, "garbled_net1.json"), []byte("{"), 0o644))
	b, err := os.ReadFile(filepath.Join(sd, "abc_net1.json"))
	must(t, err)
	must(t, os.WriteFile(filepath.Join(sd, "other_net1.json"), b, 0o644)) // holds abc_net1's record
	must(t, syscall.Mkfifo(filepath.Join(sd, "fifo_net1.json"), 0o644))
	got, err := draview.ReadStatuses(dir)
	if len(got) != 1 || got[0].ContainerID != "abc" {
		t.Errorf("good records: %+v", got)
	}
	for _, want := range []string{"garbled_net1.json", "other_net1.json holds the record of abc_net1", "fifo_net1.json"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not name %q", err, want)
		}
	}
}

// A record is one known JSON object and nothing else: data after it, a
// key twice (the last would win) or a key in another case is a bad record,
// reported by name, as a garbled one is.
func TestStatusRecordIsReadStrictly(t *testing.T) {
	const rec = `{"version":1,"claimUID":"c1","pci":"0000:18:00.2","containerID":"abc","ifName":"net1"}`
	for name, body := range map[string]string{
		"trailing data": rec + `{"containerID":"zzz"}`,
		"duplicate key": `{"version":1,"claimUID":"c1","pci":"0000:18:00.2","containerID":"abc","containerID":"abc","ifName":"net1"}`,
		"miscased key":  `{"version":1,"claimUID":"c1","PCI":"0000:18:00.2","pci":"0000:18:00.2","containerID":"abc","ifName":"net1"}`,
	} {
		dir := t.TempDir()
		must(t, os.MkdirAll(filepath.Join(dir, draview.StatusDir), 0o755))
		must(t, os.WriteFile(filepath.Join(dir, draview.StatusDir, "abc_net1.json"), []byte(body), 0o644))
		got, err := draview.ReadStatuses(dir)
		if len(got) != 0 || err == nil || !strings.Contains(err.Error(), "abc_net1.json") {
			t.Errorf("%s: ReadStatuses = %+v, %v; want no record and an error naming abc_net1.json", name, got, err)
		}
	}
	// The same record alone is read: the cases above fail for what they add.
	dir := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(dir, draview.StatusDir), 0o755))
	must(t, os.WriteFile(filepath.Join(dir, draview.StatusDir, "abc_net1.json"), []byte(rec), 0o644))
	if got, err := draview.ReadStatuses(dir); len(got) != 1 || err != nil {
		t.Errorf("the plain record: %+v, %v", got, err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// FuzzReadStatuses: any file in the status directory is read without a
// panic, and a record it accepts can be written back as it is.
func FuzzReadStatuses(f *testing.F) {
	f.Add([]byte(`{"version":1,"claimUID":"c1","pci":"0000:18:00.2","containerID":"abc","ifName":"net1","mac":"02:00:00:00:00:01","ips":["10.0.0.1/24"]}`))
	f.Add([]byte(`{"version":1,"claimUID":"c1","pci":"0000:18:00.2","containerID":"../x","ifName":"net1"}`))
	f.Add([]byte(`{`))
	f.Fuzz(func(t *testing.T, b []byte) {
		dir := t.TempDir()
		must(t, os.MkdirAll(filepath.Join(dir, draview.StatusDir), 0o755))
		must(t, os.WriteFile(filepath.Join(dir, draview.StatusDir, "abc_net1.json"), b, 0o644))
		got, _ := draview.ReadStatuses(dir)
		for _, s := range got {
			if err := draview.WriteStatus(t.TempDir(), s); err != nil {
				t.Errorf("accepted record %+v cannot be written back: %v", s, err)
			}
		}
	})
}
