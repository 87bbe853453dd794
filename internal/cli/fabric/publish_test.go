package fabric

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/railyard-io/railyard/internal/cli/clitest"
	"github.com/railyard-io/railyard/internal/fabric"
)

func TestPublishRefusesBadFlags(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{args: []string{"--wait", "1ns"}, want: "--wait 1ns"},
		{args: []string{"--wait", "1h"}, want: "--wait 1h0m0s"},
		{args: []string{"--watch", "--interval", "1ms"}, want: "--interval 1ms"},
		{args: []string{"--watch", "--dry-run"}, want: "mutually exclusive"},
		{args: []string{"--machine", "dgx-h100", "--sysfs", "/sys", "--dry-run", "--wait", "1s"}, want: "mutually exclusive"},
	} {
		_, _, err := clitest.Run(t, NewCommand, "", append([]string{"publish"}, tc.args...)...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("publish %v: err = %v, want %q", tc.args, err, tc.want)
		}
	}
}

// dryRun is what `railyard fabric publish --dry-run` prints.
type dryRun struct {
	Ports  []fabric.Port     `json:"ports"`
	Labels map[string]string `json:"labels"`
}

// TestMain: a child started with clitest.ChildEnviron runs `railyard
// fabric` instead of the tests (publishDryRun's, in a network namespace of
// its own).
func TestMain(m *testing.M) {
	clitest.ExitIfChild(NewCommand)
	os.Exit(m.Run())
}

// publishDryRun runs `railyard fabric publish --dry-run` on a built-in
// machine model and decodes what it prints. The command listens on the
// model's netdev names, so it runs in a child process in a new, empty
// network namespace (a user namespace too when not root): on the host it
// heard whatever links the machine had, and the e2e suite of another
// checkout creates veths named like this model's netdevs (a fresh clone's
// unit run beside it saw "port enp12s0f0np0 is down" instead of "no such
// netdev").
func publishDryRun(t *testing.T, machine string) dryRun {
	t.Helper()
	cmd := exec.Command(os.Args[0], "publish", "--machine", machine, "--dry-run", "--wait", "1s")
	cmd.Env = clitest.ChildEnviron()
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNET}
	if os.Geteuid() != 0 {
		cmd.SysProcAttr.Cloneflags |= syscall.CLONE_NEWUSER
		cmd.SysProcAttr.UidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Geteuid(), Size: 1}}
		cmd.SysProcAttr.GidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getegid(), Size: 1}}
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	// clone(2) refuses the namespaces: EPERM without the capability or
	// with user namespaces off, ENOSPC at max_user_namespaces, EINVAL
	// where the kernel lacks them. Any other failure fails the test.
	if errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EINVAL) {
		t.Skipf("needs a network namespace of its own (root, or user namespaces): %v", err)
	}
	if err != nil {
		t.Fatalf("publish --dry-run: %v\n%s%s", err, out, stderr.String())
	}
	var got dryRun
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("output: %v\n%s", err, out)
	}
	return got
}

// The RoCE model's netdevs do not exist in an empty network namespace, so
// every port says why it has no neighbor; the real listening is tested
// against lldpd in internal/lldp and on the multi-node cluster's fabric.
func TestPublishDryRunOnAModelWithoutItsNetdevs(t *testing.T) {
	t.Parallel()
	got := publishDryRun(t, "roce-8gpu-4nic")
	rails := 0
	for _, p := range got.Ports {
		if p.Rail >= 0 {
			rails++
		}
		if p.Switch != "" || !strings.Contains(p.NoNeighbor, "no such netdev") {
			t.Errorf("port %+v: want no neighbor, saying its netdev is missing", p)
		}
	}
	if rails != 4 || len(got.Labels) != 0 {
		t.Errorf("%d rails, labels %v; want 4 rails and no labels", rails, got.Labels)
	}
}

// A port that heard two neighbors is a warning naming both and the one
// published, its names escaped (an LLDP frame's system name is anyone's on
// the link); a port hearing one says nothing.
func TestWarnSeveralNamesTheNeighborsEscaped(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	warnSeveral(&out, "gpu-1", []fabric.Port{
		{Rail: 0, NIC: "mlx5_0", Switch: "leaf-0", SwitchPort: "swp1"},
		{Rail: 1, NIC: "mlx5_1", Switch: "leaf-1", SwitchPort: "swp1",
			Switches: []string{"evil\x1b]0;pwned\x07", "leaf-1"}, SwitchPorts: []string{"eth0", "swp1"}},
	})
	got := out.String()
	want := "railyard fabric publish: node gpu-1: WARN rail 1 NIC mlx5_1 hears 2 neighbors (evil\\x1b]0;pwned\\x07 port eth0, leaf-1 port swp1): published as leaf-1"
	if !strings.HasPrefix(got, want) || strings.Count(got, "\n") != 1 || strings.ContainsAny(got, "\x1b\x07") {
		t.Errorf("warnings:\n%q\nwant one line starting\n%q", got, want)
	}
}
