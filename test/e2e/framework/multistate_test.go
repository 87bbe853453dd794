//go:build e2e

package framework

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func mustCIDR(t *testing.T, s string) *net.IPNet {
	t.Helper()
	_, n, err := net.ParseCIDR(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestDownMultiAfterKilledOwnerKillsTrackedAndRemovesFiles: the state of a
// cluster whose server is gone (a PID running something else) still lets
// DownMulti stop the processes it tracked (only while they run the
// recorded command line) and remove the cluster's files but its logs.
func TestDownMultiAfterKilledOwnerKillsTrackedAndRemovesFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, d := range []string{"logs", "nodes/gpu-1/kubelet", "pki"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "logs", "kubelet.log"), []byte("kept"), 0o644); err != nil {
		t.Fatal(err)
	}
	ours := exec.Command("sleep", "300")
	other := exec.Command("sleep", "301") // a PID recorded with another command line
	for _, c := range []*exec.Cmd{ours, other} {
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Process.Kill(); _ = c.Wait() })
	}
	exited := make(chan struct{})
	go func() { _ = ours.Wait(); close(exited) }()
	s := &multiState{
		Dir: dir, OwnerPID: other.Process.Pid, OwnerCmdline: []string{"railyard-cluster", "up", dir},
		Processes: []trackedProcess{
			{PID: ours.Process.Pid, Cmdline: []string{"sleep", "300"}},
			{PID: other.Process.Pid, Cmdline: []string{"sleep", "999"}},
		},
	}
	if err := s.save(); err != nil {
		t.Fatal(err)
	}
	if err := DownMulti(dir, time.Second, t.Logf); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		// Say what DownMulti saw: its match is on /proc/<pid>/cmdline.
		args, err := procCmdline(ours.Process.Pid)
		status, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", ours.Process.Pid))
		t.Fatalf("the tracked process still runs: cmdline %q (%v); %s", args, err, statusLines(status, "State", "SigIgn", "SigBlk"))
	}
	if err := other.Process.Signal(syscall.Signal(0)); err != nil {
		t.Errorf("a process whose command line differs from the recorded one was killed: %v", err)
	}
	var left []string
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && p != dir {
			left = append(left, strings.TrimPrefix(p, dir+"/"))
		}
		return nil
	})
	if diff := cmp.Diff([]string{"logs", "logs/kubelet.log"}, left); diff != "" {
		t.Errorf("left in the cluster directory (-want +got):\n%s", diff)
	}
	// Down again: no state, nothing to do.
	if err := DownMulti(dir, time.Second, t.Logf); err != nil {
		t.Errorf("second down: %v", err)
	}
}

func TestLoadMultiStateRejectsForeignDir(t *testing.T) {
	t.Parallel()
	a, b := t.TempDir(), t.TempDir()
	if err := (&multiState{Dir: a}).save(); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(a, multiStateFile), filepath.Join(b, multiStateFile)); err != nil {
		t.Fatal(err)
	}
	if _, err := loadMultiState(b); err == nil || !strings.Contains(err.Error(), "names directory") {
		t.Errorf("state of %s loaded from %s: %v", a, b, err)
	}
	if err := teardownMulti(&multiState{Dir: "relative/dir"}); err == nil {
		t.Error("teardown of a relative directory accepted")
	}
}

func TestStartMultiRefusesDirectoriesNodesReplace(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("StartMulti checks root first")
	}
	t.Parallel()
	for _, dir := range []string{"/run/ry-mn", "/var/lib/kubelet/x", "/var/log", "relative"} {
		_, err := StartMulti(context.Background(), MultiConfig{Dir: dir, Machines: []string{"dgx-h100"}, NodeInit: []string{"x"}})
		if err == nil || !(strings.Contains(err.Error(), "every node replaces") || strings.Contains(err.Error(), "not absolute")) {
			t.Errorf("StartMulti(%s): %v", dir, err)
		}
	}
}

func TestRailSubnets(t *testing.T) {
	t.Parallel()
	var got []string
	for r := range 3 {
		s, spine := railSubnet(mustCIDR(t, "10.60.0.0/16"), r)
		got = append(got, s+" "+spine)
	}
	want := []string{"10.60.0.0/24 10.60.0.254", "10.60.1.0/24 10.60.1.254", "10.60.2.0/24 10.60.2.254"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("rail subnets (-want +got):\n%s", diff)
	}
}

// statusLines picks the named fields of a /proc/<pid>/status.
func statusLines(status []byte, fields ...string) string {
	var out []string
	for _, l := range strings.Split(string(status), "\n") {
		if name, _, ok := strings.Cut(l, ":"); ok && slices.Contains(fields, name) {
			out = append(out, strings.Join(strings.Fields(l), " "))
		}
	}
	return strings.Join(out, "; ")
}
