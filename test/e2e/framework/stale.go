//go:build e2e

package framework

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
)

const runDirPrefix = "railyard-e2e-"

// failureTestDirPrefix starts the base directories of the start-failure
// test (start_failure_test.go), one per injected failure, below the
// temporary directory: ReapStale looks in them too, so a killed run of
// that test leaves no cgroup behind.
const failureTestDirPrefix = "ryfail-"

// ReapStale tears down runs under baseDir whose test process is gone (killed
// before its teardown ran), using the state each run saved. It fails if a
// run's owner (this process included) is still alive: two clusters cannot
// share the kubelet's fixed device plugin directory.
func ReapStale(baseDir string, logf func(string, ...any)) error {
	dirs, err := filepath.Glob(filepath.Join(baseDir, runDirPrefix+"*"))
	if err != nil {
		return fmt.Errorf("reap stale runs: %w", err)
	}
	nested, err := filepath.Glob(filepath.Join(baseDir, failureTestDirPrefix+"*", runDirPrefix+"*"))
	if err != nil {
		return fmt.Errorf("reap stale runs: %w", err)
	}
	dirs = append(dirs, nested...)
	var errs []error
	type run struct {
		dir string
		s   *runState
	}
	var stale []run
	for _, d := range dirs {
		s, err := loadState(d)
		if err != nil {
			// A run dir without state never started anything.
			if errors.Is(err, os.ErrNotExist) {
				if mounts, merr := mountsUnder(d); merr == nil && len(mounts) == 0 {
					_ = os.RemoveAll(d)
				}
				continue
			}
			errs = append(errs, err)
			continue
		}
		if processAlive(s.OwnerPID, s.OwnerCmdline) {
			// Also when the owner is this process: one cluster at a time.
			errs = append(errs, fmt.Errorf("reap stale runs: run %s of live process %d is still up; stop it first", d, s.OwnerPID))
			continue
		}
		stale = append(stale, run{d, s})
	}
	if len(errs) > 0 {
		// Tearing a stale run down restores the host directories it
		// snapshotted (kubelet's device-plugins, ...) to what they held
		// when it started: with a live run beside it, that would delete
		// the live kubelet's socket. Nothing is torn down then.
		return errors.Join(errs...)
	}
	for _, r := range stale {
		logf("framework: tearing down stale run %s (owner pid %d gone)", r.dir, r.s.OwnerPID)
		if err := teardown(r.s); err != nil {
			errs = append(errs, fmt.Errorf("reap stale run %s: %w", r.dir, err))
		}
	}
	return errors.Join(errs...)
}

// processAlive reports whether pid runs with the given command line.
func processAlive(pid int, cmdline []string) bool {
	if pid <= 0 {
		return false
	}
	args, err := procCmdline(pid)
	return err == nil && slices.Equal(args, cmdline)
}
