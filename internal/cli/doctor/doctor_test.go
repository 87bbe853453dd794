package doctor

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/railyard-io/railyard/internal/cli/clitest"
	"github.com/railyard-io/railyard/internal/cli/iostreams"
	"github.com/railyard-io/railyard/internal/doctor"
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
	var ee *iostreams.ExitError
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

// --counter-window: negative and over a minute are refused before
// anything is read, with what is wrong.
func TestDoctorCounterWindowIsValidated(t *testing.T) {
	sys := tree(t)
	for _, c := range []struct{ arg, want string }{
		{"-1s", "--counter-window: counter window -1s: negative (0 reads the counters once)"},
		{"2m", "--counter-window: counter window 2m0s: longer than 1m0s; doctor is a quick look, watch counters for longer with railyard top"},
		{"soon", `invalid argument "soon" for "--counter-window" flag`},
	} {
		out, _, err := clitest.Run(t, NewCommand, "", "--sysfs", sys, "--host-root", t.TempDir(), "--counter-window", c.arg)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("--counter-window %s: err = %v, want %q", c.arg, err, c.want)
		}
		if out != "" {
			t.Errorf("--counter-window %s printed a report:\n%s", c.arg, out)
		}
	}
}

// An unknown --profile is refused before any check runs, naming the
// profiles; a known one is taken.
func TestDoctorProfileIsValidated(t *testing.T) {
	sys := tree(t)
	out, _, err := clitest.Run(t, NewCommand, "", "--sysfs", sys, "--host-root", t.TempDir(), "--counter-window", "0", "--profile", "lossy")
	if err == nil || !strings.Contains(err.Error(), `--profile: profile "lossy": want one of infiniband, roce-lossless, roce-lossy, cloud, virtual`) || out != "" {
		t.Errorf("--profile lossy: %q, %v", out, err)
	}
	// Accepted: the checks run (this process has no DCB of the tree's
	// netdevs, so roce-qos itself skips; internal/doctor tests what the
	// profile changes there).
	out, _, err = clitest.Run(t, NewCommand, "", "--sysfs", sys, "--host-root", t.TempDir(), "--counter-window", "0", "--profile", "roce-lossy", "--json")
	if (err != nil && strings.Contains(err.Error(), "--profile")) || !strings.Contains(out, `"id": "roce-qos"`) {
		t.Errorf("--profile roce-lossy: %v\n%s", err, out)
	}
}

// The flag reaches the check: the NICs' counters are read twice the window
// apart, or once with 0; a link_downed since boot warns either way. Its
// help has an example.
func TestDoctorCounterWindow(t *testing.T) {
	sys := tree(t)
	for _, rdma := range []string{"mlx5_0", "mlx5_1", "mlx5_2"} {
		if err := fakesysfs.WriteCounters(sys, rdma, fakesysfs.MLX5); err != nil {
			t.Fatal(err)
		}
	}
	if err := fakesysfs.SetCounter(sys, "mlx5_0", 1, "counters/link_downed", 2); err != nil {
		t.Fatal(err)
	}
	for window, how := range map[string]string{"10ms": "read twice, 10ms apart: none rose", "0": "read once (no counter window: rises not checked)"} {
		out, _, _ := clitest.Run(t, NewCommand, "", "--sysfs", sys, "--host-root", t.TempDir(), "--json", "--counter-window", window)
		var r struct {
			Checks []struct{ ID, Subject, Status, Summary string } `json:"checks"`
		}
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatalf("json: %v\n%s", err, out)
		}
		got := map[string]string{}
		for _, c := range r.Checks {
			if c.ID == "rdma-errors" {
				got[c.Subject] = c.Status
				if c.Subject == "mlx5_0/1" && !strings.Contains(c.Summary, "counters/link_downed 2 (history") {
					t.Errorf("--counter-window %s: mlx5_0/1 %q", window, c.Summary)
				}
				if c.Subject == "mlx5_1/1" && !strings.Contains(c.Summary, how) {
					t.Errorf("--counter-window %s: mlx5_1/1 %q, want %q", window, c.Summary, how)
				}
			}
		}
		if diff := cmp.Diff(map[string]string{"mlx5_0/1": "warn", "mlx5_1/1": "ok", "mlx5_2/1": "ok"}, got); diff != "" {
			t.Errorf("--counter-window %s: rdma-errors (-want +got):\n%s", window, diff)
		}
	}
	out, _, err := clitest.Run(t, NewCommand, "", "--help")
	if err != nil || !strings.Contains(out, "railyard doctor --counter-window 30s") || !strings.Contains(out, "--counter-window duration") {
		t.Errorf("help (%v):\n%s", err, out)
	}
}

// The firmware policy's flags reach the check (the small node's NICs run
// 22.39.1002 and 20.39.1002), and bad values are refused before anything
// is read, each named.
func TestDoctorFirmwarePolicyFlags(t *testing.T) {
	sys := tree(t)
	out, _, _ := clitest.Run(t, NewCommand, "", "--sysfs", sys, "--host-root", t.TempDir(), "--counter-window", "0",
		"--firmware-minimum", "15b3:101d=22.40.1000", "--json")
	var r struct {
		Checks []struct{ ID, Subject, Status, Summary string } `json:"checks"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("json: %v\n%s", err, out)
	}
	refused := 0
	for _, c := range r.Checks {
		if c.ID == "firmware" && c.Status == "fail" && strings.Contains(c.Summary, "below the minimum 22.40.1000 for 15b3:101d") {
			refused++
		}
	}
	if refused != 1 {
		t.Errorf("%d failing firmware lines for 15b3:101d, want 1:\n%s", refused, out)
	}
	out, _, err := clitest.Run(t, NewCommand, "", "--sysfs", sys, "--host-root", t.TempDir(),
		"--firmware-minimum", "cx7=28.39.1002", "--refuse-known-issue", "123")
	if err == nil || !strings.Contains(err.Error(), `model "cx7"`) || !strings.Contains(err.Error(), `"123" is not a known issue`) || out != "" {
		t.Errorf("bad firmware flags: %q, %v", out, err)
	}
}

// --firmware-minimum given twice for one model is refused, whether the
// model is spelled the same both times or in another case (15B3:1021 is
// 15b3:1021), before anything is read; one value per model, or several
// models in one value, are taken.
func TestDoctorFirmwareMinimumGivenTwice(t *testing.T) {
	t.Parallel()
	for _, second := range []string{"15b3:1021=28.40.1000", "15B3:1021=28.40.1000", "15b3:101d=22.40.1000,15b3:1021=28.40.1000"} {
		out, _, err := clitest.Run(t, NewCommand, "", "--sysfs", t.TempDir(), "--host-root", t.TempDir(),
			"--firmware-minimum", "15b3:1021=28.39.1002", "--firmware-minimum", second)
		if err == nil || !strings.Contains(err.Error(), "model 15b3:1021 is given twice") || out != "" {
			t.Errorf("--firmware-minimum 15b3:1021=28.39.1002 --firmware-minimum %s: %q, %v; want model 15b3:1021 is given twice", second, out, err)
		}
	}
	got, err := minimums([]string{"15b3:1021=28.39.1002", "15b3:101d=22.40.1000,15b3:101b=20.39.1002"})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]string{"15b3:1021": "28.39.1002", "15b3:101d": "22.40.1000", "15b3:101b": "20.39.1002"}, got); diff != "" {
		t.Errorf("minimums (-want +got):\n%s", diff)
	}
}

// --help lists every check of doctor's table, by its ids and its line.
func TestDoctorHelpListsEveryCheck(t *testing.T) {
	out, _, err := clitest.Run(t, NewCommand, "", "--help")
	if err != nil {
		t.Fatal(err)
	}
	flat := strings.Join(strings.Fields(out), " ")
	for _, c := range doctor.Checks() {
		if ids := "  " + strings.Join(c.IDs, ", ") + "\n"; !strings.Contains(out, ids) {
			t.Errorf("help has no line %q", ids)
		}
		if !strings.Contains(flat, c.Line) {
			t.Errorf("help does not say %q", c.Line)
		}
	}
}
