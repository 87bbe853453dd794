package topo

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/railyard-io/railyard/internal/cli/clitest"
	clidoctor "github.com/railyard-io/railyard/internal/cli/doctor"
	"github.com/railyard-io/railyard/internal/fakesysfs"
)

// `topo --capture` of a generated tree, extracted with tar as the command
// says, replays to the same `topo --json` and `doctor --json`.
func TestCaptureReplaysTopoAndDoctorJSON(t *testing.T) {
	d, err := fakesysfs.SmallNode()
	if err != nil {
		t.Fatal(err)
	}
	sys, host := t.TempDir(), t.TempDir()
	if err := fakesysfs.Generate(sys, d, fakesysfs.Options{VFsPerPF: 2}); err != nil {
		t.Fatal(err)
	}
	if err := fakesysfs.SetPCIeLink(sys, "0000:18:00.0", fakesysfs.Link{Speed: 8, MaxSpeed: 16, Width: 16, MaxWidth: 16}); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(host, "proc"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(host, "proc/modules"), []byte("nvidia_peermem 16384 0 - Live 0x0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "node.tar.gz")
	out, _, err := run(t, "--capture", file, "--sysfs", sys, "--host-root", host)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "wrote "+file) || !strings.Contains(out, "tar -xzf") {
		t.Errorf("output: %s", out)
	}
	// A second capture never overwrites the first.
	if _, _, err := run(t, "--capture", file, "--sysfs", sys); err == nil || !strings.Contains(err.Error(), "exists") {
		t.Errorf("capture over an existing file: %v", err)
	}
	tarBin, err := exec.LookPath("tar")
	if err != nil {
		t.Skip("no tar to extract with")
	}
	dir := t.TempDir()
	if b, err := exec.Command(tarBin, "-xzf", file, "-C", dir).CombinedOutput(); err != nil {
		t.Fatalf("tar: %v: %s", err, b)
	}
	rsys, rhost := filepath.Join(dir, "sys"), filepath.Join(dir, "host")
	want, _, err := run(t, "--json", "--sysfs", sys)
	if err != nil {
		t.Fatal(err)
	}
	got, _, err := run(t, "--json", "--sysfs", rsys)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("topo --json (-live +replayed):\n%s", diff)
	}
	doctorJSON := func(sys, host string) string {
		out, _, _ := clitest.Run(t, clidoctor.NewCommand, "", "--json", "--sysfs", sys, "--host-root", host)
		return strings.NewReplacer(sys, "SYS", host, "HOST").Replace(out)
	}
	want, got = doctorJSON(sys, host), doctorJSON(rsys, rhost)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("doctor --json (-live +replayed):\n%s", diff)
	}
	if !strings.Contains(got, "8 GT/s x16 (of 16 GT/s x16)") {
		t.Errorf("replayed doctor lacks the degraded link:\n%s", got)
	}
}

func TestCaptureRefusesAModel(t *testing.T) {
	t.Parallel()
	_, _, err := run(t, "--capture", filepath.Join(t.TempDir(), "x.tar.gz"), "--machine", "dgx-h100")
	if err == nil || !strings.Contains(err.Error(), "not with --machine") {
		t.Errorf("err = %v", err)
	}
}
