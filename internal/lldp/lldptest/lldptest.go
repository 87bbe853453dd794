package lldptest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/railyard-io/railyard/internal/netops/netnstest"
)

// Require skips the test without root, iproute2 or lldpd.
func Require(t testing.TB) {
	t.Helper()
	netnstest.Require(t)
	for _, bin := range []string{"lldpd", "lldpcli"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Skipf("needs Debian's lldpd (%s; hack/install-deps.sh installs it)", bin)
		}
	}
}

// StartLeaf runs lldpd in the named network namespace on the interface
// port, as a leaf switch named sysName: interface-name port IDs and a 1 s
// transmit interval (the default is 30 s), as the test cluster's fabric
// configures it. lldpd stops when the test ends.
func StartLeaf(t testing.TB, netns, port, sysName string) {
	t.Helper()
	startLeaf(t, netns, port, sysName)
}

// StartStoppableLeaf is StartLeaf, and returns stop, which ends lldpd as
// its service would (SIGTERM: lldpd sends a shutdown data unit, TTL 0,
// on its ports before it exits) and waits for it.
func StartStoppableLeaf(t testing.TB, netns, port, sysName string) (stop func()) {
	t.Helper()
	cmd := startLeaf(t, netns, port, sysName)
	return func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	}
}

func startLeaf(t testing.TB, netns, port, sysName string) *exec.Cmd {
	t.Helper()
	// lldpd creates its control socket after dropping to its own user,
	// which cannot enter t.TempDir's 0700 directories.
	dir, err := os.MkdirTemp("", "railyard-lldpd-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	sock, pid, conf := filepath.Join(dir, "lldpd.sock"), filepath.Join(dir, "lldpd.pid"), filepath.Join(dir, "lldpd.conf")
	// lldpd starts paused, has lldpcli run this file, then resumes: its
	// first frame already carries the name and the interface-name port ID.
	config := "configure system hostname " + sysName + "\nconfigure lldp portidsubtype ifname\nconfigure lldp tx-interval 1\n"
	if err := os.WriteFile(conf, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	// ip netns exec execs lldpd, so the process is lldpd's monitor, whose
	// unprivileged child exits with it.
	cmd := exec.Command("ip", "netns", "exec", netns, "lldpd", "-d", "-u", sock, "-p", pid, "-O", conf, "-I", port, "-S", "test leaf")
	log := &strings.Builder{}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting lldpd: %v", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("lldpd log:\n%s", log.String())
		}
	})
	return cmd
}
