package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/railyard-io/railyard/internal/cli/iostreams"
)

// childEnv makes the test binary act as the railyard command (main's
// code), with the arguments in JSON: the signal tests need a real process.
const childEnv = "RAILYARD_CLI_SIGNAL_CHILD"

func TestMain(m *testing.M) {
	if args := os.Getenv(childEnv); args != "" {
		os.Exit(childMain(args))
	}
	os.Exit(m.Run())
}

func childMain(argsJSON string) int {
	var args []string
	if err := json.Unmarshal([]byte(argsJSON), &args); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	ctx, stop := NotifyContext(context.Background())
	defer stop()
	fmt.Fprintln(os.Stderr, "ready")
	if err := Run(ctx, args, iostreams.Std()); err != nil {
		fmt.Fprintln(os.Stderr, "railyard:", err)
		var coded interface{ ExitCode() int }
		if errors.As(err, &coded) {
			return coded.ExitCode()
		}
		return 1
	}
	return 0
}

type child struct {
	cmd    *exec.Cmd
	stderr *strings.Builder
	done   chan error
}

// startChild runs the command in a child process and returns once the
// child handles signals.
func startChild(t *testing.T, args ...string) *child {
	t.Helper()
	js, _ := json.Marshal(args)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+string(js))
	// Standard input is a pipe nobody writes: "bench parse -" blocks in
	// read(2), which no context reaches (a FIFO argument no longer blocks:
	// file inputs are opened non-blocking and refused).
	stdin, stdinW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = stdin.Close(); _ = stdinW.Close() })
	cmd.Stdin = stdin
	pipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &child{cmd: cmd, stderr: &strings.Builder{}, done: make(chan error, 1)}
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			if sc.Text() == "ready" {
				close(ready)
				continue
			}
			c.stderr.WriteString(sc.Text() + "\n")
		}
		c.done <- cmd.Wait()
	}()
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	select {
	case <-ready:
	case <-time.After(30 * time.Second):
		t.Fatal("child did not start")
	}
	return c
}

func (c *child) wait(t *testing.T, limit time.Duration) (*os.ProcessState, time.Duration) {
	t.Helper()
	start := time.Now()
	select {
	case <-c.done:
		return c.cmd.ProcessState, time.Since(start)
	case <-time.After(limit):
		t.Fatalf("child still running %v after the signal; stderr: %s", limit, c.stderr)
		return nil, 0
	}
}

// bench parse of standard input nobody writes blocks in read(2), which no
// context reaches: Ctrl-C used to do nothing. Now the process exits 130 with
// "interrupted" after the grace period.
func TestSIGINTEndsABlockedCommand(t *testing.T) {
	c := startChild(t, "bench", "parse", "-")
	time.Sleep(300 * time.Millisecond) // let it block in read
	if err := c.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	st, took := c.wait(t, Grace+10*time.Second)
	if st.ExitCode() != 130 || !strings.Contains(c.stderr.String(), "railyard: interrupted") {
		t.Errorf("exit %d, stderr %q; want 130 and \"railyard: interrupted\"", st.ExitCode(), c.stderr)
	}
	t.Logf("exited %v after SIGINT", took)
}

// SIGTERM (what kubectl and systemd send) is handled the same way; a
// command that checks its context (the simulator) stops well within the
// grace period.
func TestSIGTERMStopsASimulationPromptly(t *testing.T) {
	// Every policy over 2M pods: about 9 s on 2 cores, so still running
	// when the signal comes (the simulator got fast enough to finish
	// 1M pods of one policy in under a second).
	c := startChild(t, "simulate", "--machine", "dgx-a100", "--nodes", "2000", "--pods", "2000000")
	time.Sleep(time.Second)
	if err := c.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	st, took := c.wait(t, Grace+10*time.Second)
	if st.ExitCode() != 130 || !strings.Contains(c.stderr.String(), "railyard: interrupted") {
		t.Errorf("exit %d, stderr %q; want 130 and \"railyard: interrupted\"", st.ExitCode(), c.stderr)
	}
	if took >= Grace {
		t.Errorf("took %v: the simulation did not look at its context", took)
	}
	t.Logf("stopped %v after SIGTERM (grace %v)", took.Round(time.Millisecond), Grace)
}

// A second signal does not wait for the grace period: it kills.
func TestSecondSignalKillsAtOnce(t *testing.T) {
	c := startChild(t, "bench", "parse", "-")
	time.Sleep(300 * time.Millisecond)
	if err := c.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	if err := c.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	st, took := c.wait(t, Grace)
	ws := st.Sys().(syscall.WaitStatus)
	if !ws.Signaled() || ws.Signal() != syscall.SIGINT {
		t.Errorf("status %v, want killed by SIGINT", st)
	}
	if took > Grace/2 {
		t.Errorf("took %v after the second signal", took)
	}
}

func TestInterruptedError(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := runInterruptible(ctx, func() error { return ctx.Err() })
	if !errors.Is(err, ErrInterrupted) || !errors.Is(err, context.Canceled) || err.Error() != "interrupted" {
		t.Errorf("err = %v", err)
	}
	var coded interface{ ExitCode() int }
	if !errors.As(err, &coded) || coded.ExitCode() != 130 {
		t.Errorf("no exit code 130 in %v", err)
	}
	if err := runInterruptible(context.Background(), func() error { return nil }); err != nil {
		t.Errorf("uninterrupted run: %v", err)
	}
}

// machines --write-sysfs used to ignore SIGTERM and leave a partial tree;
// now it stops, removes what it wrote and exits 130.
func TestSIGTERMRemovesAPartialTree(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "sys")
	c := startChild(t, "machines", "dgx-h100", "--write-sysfs", dir, "--vfs", "256")
	deadline := time.Now().Add(20 * time.Second)
	for { // wait until the tree is being written
		if _, err := os.Stat(filepath.Join(dir, "devices")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the tree never appeared")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := c.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	st, took := c.wait(t, Grace+10*time.Second)
	if st.ExitCode() != 130 {
		t.Errorf("exit %d, stderr %q; want 130", st.ExitCode(), c.stderr)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("partial tree left at %s (%v)", dir, err)
	}
	t.Logf("stopped and cleaned up %v after SIGTERM", took)
}
