package lldptest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
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

// Leaf is a running lldpd that can be paused and resumed.
type Leaf struct {
	t   testing.TB
	cmd *exec.Cmd
}

// StartPausableLeaf is StartLeaf, and returns the leaf so that a test can
// silence it without a shutdown frame (Pause), as a hung switch agent
// would be silent, and let it speak again (Resume).
func StartPausableLeaf(t testing.TB, netns, port, sysName string) *Leaf {
	t.Helper()
	return &Leaf{t: t, cmd: startLeaf(t, netns, port, sysName)}
}

// Pause stops lldpd and its child (SIGSTOP to both: lldpd's privilege
// separation forks an unprivileged child that sends the frames): the port
// hears nothing, and no shutdown frame (lldpd sends one only when it ends).
func (l *Leaf) Pause() {
	l.t.Helper()
	l.signal(syscall.SIGSTOP)
}

// Resume continues a paused lldpd (SIGCONT): it sends again at its next
// transmit interval.
func (l *Leaf) Resume() {
	l.t.Helper()
	l.signal(syscall.SIGCONT)
}

func (l *Leaf) signal(sig syscall.Signal) {
	l.t.Helper()
	pids, err := tree(l.cmd.Process.Pid)
	if err != nil {
		l.t.Fatalf("lldpd's processes: %v", err)
	}
	for _, pid := range pids {
		if err := syscall.Kill(pid, sig); err != nil {
			l.t.Fatalf("signalling lldpd process %d: %v", pid, err)
		}
	}
}

// tree returns pid and its descendants, read from /proc's children lists.
func tree(pid int) ([]int, error) {
	out := []int{pid}
	for i := 0; i < len(out); i++ {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", out[i], out[i]))
		if err != nil {
			return nil, err
		}
		for _, f := range strings.Fields(string(b)) {
			c, err := strconv.Atoi(f)
			if err != nil {
				return nil, fmt.Errorf("/proc/%d children: %w", out[i], err)
			}
			out = append(out, c)
		}
	}
	return out, nil
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
		// A paused leaf's child would stay stopped after its monitor's end.
		if pids, err := tree(cmd.Process.Pid); err == nil {
			for _, pid := range pids {
				_ = syscall.Kill(pid, syscall.SIGCONT)
			}
		}
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("lldpd log:\n%s", log.String())
		}
	})
	return cmd
}
