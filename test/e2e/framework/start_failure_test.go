//go:build e2e

package framework

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/railyard-io/railyard/internal/exectest"
)

// repoDir finds the repository root from the package directory.
func repoDir(t *testing.T) string {
	t.Helper()
	dir, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// hostSnapshot is what a failed Start must leave as it found it.
type hostSnapshot struct {
	runDirs   []string
	entries   map[string][]string
	cgroups   []string
	bridge    bool
	mounts    int
	processes []int
}

func takeSnapshot(t *testing.T, base, bridge string) hostSnapshot {
	t.Helper()
	s := hostSnapshot{entries: map[string][]string{}}
	s.runDirs, _ = filepath.Glob(filepath.Join(base, runDirPrefix+"*"))
	for _, hd := range hostDirs {
		if es, err := os.ReadDir(hd.path); err == nil {
			for _, e := range es {
				s.entries[hd.path] = append(s.entries[hd.path], e.Name())
			}
		} else {
			s.entries[hd.path] = []string{"<absent>"}
		}
	}
	points, err := cgroupMounts()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range points {
		m, _ := filepath.Glob(filepath.Join(p, runDirPrefix+"*"))
		s.cgroups = append(s.cgroups, m...)
	}
	_, err = netlink.LinkByName(bridge)
	s.bridge = err == nil
	ms, err := mountsUnder(base)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		if strings.Contains(m, runDirPrefix) {
			s.mounts++
		}
	}
	// Processes whose command line mentions a run dir of base.
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil {
			continue
		}
		args, err := procCmdline(pid)
		if err != nil {
			continue
		}
		if slices.ContainsFunc(args, func(a string) bool { return strings.Contains(a, filepath.Join(base, runDirPrefix)) }) {
			s.processes = append(s.processes, pid)
		}
	}
	return s
}

// TestStartFailureLeavesNothingBehind makes each start step fail in turn
// (a component that exits at once, a missing busybox for the image step) and
// checks that Start reports the step and tears down everything it had done:
// no run dir, cgroup, bridge, mount or process left, the kubelet's and
// containerd's fixed directories as they were.
func TestStartFailureLeavesNothingBehind(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root (it starts etcd, containerd and a bridge)")
	}
	repo := repoDir(t)
	k8sBin := envOr("RAILYARD_E2E_K8S_BIN", filepath.Join(repo, "_output/k8s/bin"))
	cniBin := envOr("RAILYARD_E2E_CNI_BIN", filepath.Join(repo, "_output/k8s/cni"))
	const bridge = "ry-e2e-fail0"
	for _, tc := range []struct {
		name    string
		failing string // binary replaced by one that exits 1
		busybox string
		step    string // expected in the error
	}{
		{name: "apiserver exits", failing: "kube-apiserver", step: "kube-apiserver"},
		{name: "scheduler exits", failing: "kube-scheduler", step: "kube-scheduler"},
		{name: "image build fails", busybox: "/nonexistent/busybox", step: "images"},
		{name: "kubelet exits", failing: "kubelet", step: "kubelet"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Short: containerd's sockets live under it (108-byte limit).
			base, err := os.MkdirTemp("", failureTestDirPrefix)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(base) })
			bin := filepath.Join(base, "bin")
			if err := os.Mkdir(bin, 0o755); err != nil {
				t.Fatal(err)
			}
			for _, b := range []string{"kube-apiserver", "kube-scheduler", "kubelet", "kubectl"} {
				if _, err := os.Stat(filepath.Join(k8sBin, b)); err != nil {
					t.Fatalf("%v (run hack/cluster/build.sh k8s)", err)
				}
				if b == tc.failing {
					script := "#!/bin/sh\necho injected failure >&2\nexit 1\n"
					exectest.WriteExecutable(t, filepath.Join(bin, b), []byte(script))
					continue
				}
				if err := os.Symlink(filepath.Join(k8sBin, b), filepath.Join(bin, b)); err != nil {
					t.Fatal(err)
				}
			}
			before := takeSnapshot(t, base, bridge)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			c, err := Start(ctx, Config{
				K8sBinDir: bin, CNIBinDir: cniBin, BusyboxPath: tc.busybox,
				BaseDir: base, Bridge: bridge, Subnet: "10.218.0.0/24",
				LogDir: filepath.Join(base, "logs"),
			})
			if err == nil {
				_ = c.Stop()
				t.Fatal("Start succeeded with an injected failure")
			}
			if !strings.Contains(err.Error(), "framework: "+tc.step+":") {
				t.Errorf("error does not name step %q: %v", tc.step, err)
			}
			after := takeSnapshot(t, base, bridge)
			// Cgroups are the host's, not base's: only those this Start
			// made count (a killed run elsewhere may have left its own; the
			// reaper is for those).
			made := slices.DeleteFunc(slices.Clone(after.cgroups), func(cg string) bool { return slices.Contains(before.cgroups, cg) })
			if len(after.runDirs) != 0 || len(made) != 0 || after.bridge || after.mounts != 0 || len(after.processes) != 0 {
				t.Errorf("left behind: run dirs %v, cgroups %v, bridge %v, mounts %d, processes %v",
					after.runDirs, made, after.bridge, after.mounts, after.processes)
			}
			for d, es := range before.entries {
				if !slices.Equal(es, after.entries[d]) {
					t.Errorf("%s: entries %v before, %v after", d, es, after.entries[d])
				}
			}
		})
	}
}
