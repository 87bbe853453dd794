//go:build e2e

package framework

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// Process is a background process started by the framework. Its standard
// output and error go to a log file. Stop it with Stop; the cluster stops
// every process it started at teardown.
type Process struct {
	Name    string
	Path    string
	Args    []string
	LogPath string

	cmd  *exec.Cmd
	done chan struct{}
	mu   sync.Mutex
	err  error
}

// startProcess starts path with args in the background, logging to logPath
// (appended, so a restarted process keeps its history). The process dies with
// the test binary (Pdeathsig) as a last resort; teardown normally stops it.
func startProcess(name, path string, args []string, env []string, logPath string) (*Process, error) {
	if err := os.MkdirAll(filepath.Dir(logPath), 0o755); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	fmt.Fprintf(logFile, "=== %s: %s %q\n", time.Now().Format(time.RFC3339Nano), path, args)
	cmd := exec.Command(path, args...)
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &Process{Name: name, Path: path, Args: args, LogPath: logPath, cmd: cmd, done: make(chan struct{})}
	go func() {
		err := cmd.Wait()
		logFile.Close()
		p.mu.Lock()
		p.err = err
		p.mu.Unlock()
		close(p.done)
	}()
	return p, nil
}

// PID returns the process ID.
func (p *Process) PID() int { return p.cmd.Process.Pid }

// Exited reports whether the process has exited, and its wait error.
func (p *Process) Exited() (bool, error) {
	select {
	case <-p.done:
		p.mu.Lock()
		defer p.mu.Unlock()
		return true, p.err
	default:
		return false, nil
	}
}

// Stop sends SIGTERM to the process (and its process group), waits up to
// grace, then sends SIGKILL. It returns nil once the process is gone, whatever
// its exit status.
func (p *Process) Stop(grace time.Duration) error {
	if exited, _ := p.Exited(); exited {
		return nil
	}
	pid := p.PID()
	_ = syscall.Kill(-pid, syscall.SIGTERM)
	_ = syscall.Kill(pid, syscall.SIGTERM)
	select {
	case <-p.done:
		return nil
	case <-time.After(grace):
	}
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	_ = syscall.Kill(pid, syscall.SIGKILL)
	select {
	case <-p.done:
		return nil
	case <-time.After(10 * time.Second):
		return fmt.Errorf("stop %s (pid %d): still running after SIGKILL", p.Name, pid)
	}
}

// Kill sends SIGKILL to the process (and its process group) and waits for it.
func (p *Process) Kill() error { return p.Stop(0) }

// Wait waits for the process to exit or ctx to end.
func (p *Process) Wait(ctx context.Context) error {
	select {
	case <-p.done:
		_, err := p.Exited()
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// errExited is returned by readiness checks when the process died first.
var errExited = errors.New("process exited")

// waitFor polls check every interval until it returns nil, ctx ends, or the
// process exits. The last error of check is wrapped into the timeout error.
func (p *Process) waitFor(ctx context.Context, what string, interval time.Duration, check func(context.Context) error) error {
	var last error
	for {
		if exited, err := p.Exited(); exited {
			return errors.Join(fmt.Errorf("%s: %s %w; see %s", what, p.Name, errExited, p.LogPath), err) // err is nil after a clean exit
		}
		if last = check(ctx); last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: %w (last error: %w); see %s", what, ctx.Err(), last, p.LogPath)
		case <-time.After(interval):
		}
	}
}
