package doctor

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/railyard-io/railyard/internal/cli/clitest"
	"github.com/railyard-io/railyard/internal/fakesysfs"
	"github.com/railyard-io/railyard/machines"
)

func tree(t *testing.T) string {
	t.Helper()
	d, err := fakesysfs.SmallNode()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := fakesysfs.Generate(dir, d, fakesysfs.Options{}); err != nil {
		t.Fatal(err)
	}
	return dir
}

// A generated tree with an empty host root: RoCE netdevs at MTU 1500 and
// no nvidia_peermem, so warnings and failures, exit 2, in both formats.
func TestDoctorOnAGeneratedTree(t *testing.T) {
	sys := tree(t)
	out, _, err := clitest.Run(t, NewCommand, "", "--sysfs", sys, "--host-root", t.TempDir())
	var ee *ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 {
		t.Fatalf("err = %v, want exit 2\n%s", err, out)
	}
	for _, want := range []string{"CHECK", "gpudirect", "FAIL gpudirect", "fix:  modprobe nvidia_peermem", "WARN mtu", "read: sysfs class/net/ens42np0/mtu: 1500"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	out, _, _ = clitest.Run(t, NewCommand, "", "--sysfs", sys, "--host-root", t.TempDir(), "--json")
	var r struct {
		Checks []struct{ ID, Status string } `json:"checks"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil || len(r.Checks) < 10 {
		t.Fatalf("json: %v\n%s", err, out)
	}
}

func TestDoctorBadPolicy(t *testing.T) {
	_, _, err := clitest.Run(t, NewCommand, "", "--sysfs", tree(t), "--policy", "/nonexistent.yaml")
	if err == nil || !strings.Contains(err.Error(), "node policy") {
		t.Fatalf("err = %v", err)
	}
}

// The shipped dgx-h100 tree has no config space for its bridges: doctor
// cannot read their ACS control, so no ACS line may say "no redirection".
func TestDoctorNeverPassesACSItCannotRead(t *testing.T) {
	d, err := machines.Description("dgx-h100")
	if err != nil {
		t.Fatal(err)
	}
	sys := t.TempDir()
	if err := fakesysfs.Generate(sys, d, fakesysfs.Options{}); err != nil {
		t.Fatal(err)
	}
	out, _, _ := clitest.Run(t, NewCommand, "", "--sysfs", sys, "--host-root", t.TempDir(), "--json")
	var r struct {
		Checks []struct{ ID, Subject, Status, Summary string } `json:"checks"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("json: %v\n%s", err, out)
	}
	acs := 0
	for _, c := range r.Checks {
		if c.ID != "acs" {
			continue
		}
		acs++
		if c.Status != "skip" || !strings.Contains(c.Summary, "cannot read the ACS control") {
			t.Errorf("%s: %s %q, want skip: cannot read the ACS control", c.Subject, c.Status, c.Summary)
		}
	}
	if acs != 8 {
		t.Errorf("%d ACS checks, want one per GPU (8)", acs)
	}
}
