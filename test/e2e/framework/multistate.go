//go:build e2e

package framework

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/vishvananda/netlink"
)

// multiState is what a multi-node cluster's teardown needs, saved in
// <dir>/state.json as soon as anything exists, so that Down cleans up after
// a killed owner too. The nodes' mounts, processes, network links and pod
// network namespaces live in the nodes' own namespaces and vanish with their
// PID 1; what stays on the host is listed here.
type multiState struct {
	Dir          string           `json:"dir"`
	OwnerPID     int              `json:"ownerPID"`
	OwnerCmdline []string         `json:"ownerCmdline"`
	Bridge       string           `json:"bridge"`
	Cgroups      []string         `json:"cgroups"`
	Processes    []trackedProcess `json:"processes"`
	// CreatedDirs are host directories made as mount points (a node binds
	// its own /var/lib/kubelet over it); removed at teardown if empty.
	CreatedDirs []string `json:"createdDirs"`
}

const multiStateFile = "state.json"

func (s *multiState) save() error {
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return fmt.Errorf("save cluster state: %w", err)
	}
	tmp := filepath.Join(s.Dir, multiStateFile+".tmp")
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return fmt.Errorf("save cluster state: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(s.Dir, multiStateFile)); err != nil {
		return fmt.Errorf("save cluster state: %w", err)
	}
	return nil
}

func loadMultiState(dir string) (*multiState, error) {
	data, err := os.ReadFile(filepath.Join(dir, multiStateFile))
	if err != nil {
		return nil, fmt.Errorf("load cluster state: %w", err)
	}
	var s multiState
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("load cluster state %s: %w", dir, err)
	}
	if s.Dir != dir {
		return nil, fmt.Errorf("load cluster state %s: names directory %q", dir, s.Dir)
	}
	return &s, nil
}

// keptEntries stay in the cluster directory after teardown: the logs.
var keptEntries = []string{"logs"}

// teardownMulti removes everything a multi-node cluster left on the host,
// by PID and by path: its processes (a node's unshare takes the node's PID
// 1, and so every process of the node, with it), the cgroups of every node,
// the cluster bridge, the mount points it made and the cluster directory's
// runtime files. Safe on a half-started cluster and after a killed owner;
// it keeps going after errors and returns them all.
func teardownMulti(s *multiState) error {
	if !filepath.IsAbs(s.Dir) || s.Dir == "/" {
		return fmt.Errorf("teardown: %q is not a cluster directory", s.Dir)
	}
	var errs []error
	add := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	add(killTracked(s.Processes))
	for _, cg := range s.Cgroups {
		add(killCgroupProcesses(cg))
	}
	// A node's mounts go with its mount namespace once its last process
	// is gone; wait for that before removing its directories.
	add(waitNamespacesGone(s.Dir, 30*time.Second))
	for _, cg := range s.Cgroups {
		add(removeCgroups(cg))
	}
	if s.Bridge != "" {
		add(deleteBridge(s.Bridge))
	}
	add(unmountUnder(s.Dir))
	for i := len(s.CreatedDirs) - 1; i >= 0; i-- {
		// Only if empty: something else may have started using it.
		if err := syscall.Rmdir(s.CreatedDirs[i]); err != nil && !errors.Is(err, syscall.ENOENT) && !errors.Is(err, syscall.ENOTEMPTY) {
			add(fmt.Errorf("teardown: %w", err))
		}
	}
	entries, err := os.ReadDir(s.Dir)
	if err != nil && !os.IsNotExist(err) {
		add(fmt.Errorf("teardown: %w", err))
	}
	for _, e := range entries {
		if slices.Contains(keptEntries, e.Name()) {
			continue
		}
		add(removeAllRetry(filepath.Join(s.Dir, e.Name())))
	}
	return errors.Join(errs...)
}

// waitNamespacesGone waits until no process runs with a working directory
// or root below dir's nodes (a node's PID 1 and everything it started run
// there), i.e. until every node's namespaces are released.
func waitNamespacesGone(dir string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		left := nodeProcesses(dir)
		if len(left) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("teardown: processes of %s still running: %v", dir, left)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// nodeProcesses lists processes whose command line names dir/nodes (the
// nodes' PID 1, containerd, kubelet and shims all do).
func nodeProcesses(dir string) []int {
	mark := filepath.Join(dir, "nodes") + "/"
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := parsePID(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		args, err := procCmdline(pid)
		if err != nil {
			continue
		}
		for _, a := range args {
			if strings.Contains(a, mark) {
				pids = append(pids, pid)
				break
			}
		}
	}
	return pids
}

func parsePID(s string) (int, error) {
	var pid int
	if _, err := fmt.Sscanf(s, "%d", &pid); err != nil || fmt.Sprint(pid) != s {
		return 0, fmt.Errorf("not a pid: %q", s)
	}
	return pid, nil
}

func removeAllRetry(path string) error {
	var err error
	for range 20 {
		if err = os.RemoveAll(path); err == nil {
			return nil
		}
		time.Sleep(200 * time.Millisecond)
	}
	return fmt.Errorf("teardown: %w", err)
}

// DownMulti stops the multi-node cluster in dir: it asks the process that
// runs it (up.sh's server) to stop (SIGTERM, then SIGKILL after grace),
// then removes whatever is left by the saved state, so it also cleans up
// after a killed server. A directory without state is already down.
func DownMulti(dir string, grace time.Duration, logf func(string, ...any)) error {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return fmt.Errorf("down: %w", err)
	}
	s, err := loadMultiState(dir)
	if errors.Is(err, os.ErrNotExist) {
		logf("down: %s has no cluster state: nothing to do", dir)
		return nil
	}
	if err != nil {
		return err
	}
	if processAlive(s.OwnerPID, s.OwnerCmdline) {
		logf("down: stopping the cluster's server (pid %d)", s.OwnerPID)
		_ = syscall.Kill(s.OwnerPID, syscall.SIGTERM)
		if !waitGone(s.OwnerPID, s.OwnerCmdline, grace) {
			logf("down: server still running after %v: killing it", grace)
			_ = syscall.Kill(s.OwnerPID, syscall.SIGKILL)
			waitGone(s.OwnerPID, s.OwnerCmdline, 10*time.Second)
		}
		// It may have torn down and removed its state already.
		if s2, err := loadMultiState(dir); err == nil {
			s = s2
		} else if errors.Is(err, os.ErrNotExist) {
			return nil
		}
	}
	logf("down: removing what is left of %s", dir)
	return teardownMulti(s)
}

// HostTraces lists what of the cluster described by info is still on the
// host: processes naming its directory, its cgroups, bridge and node links,
// mounts below its directory, and files in it but the logs. Empty once
// DownMulti is done.
func HostTraces(info *ClusterInfo) []string {
	var out []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := parsePID(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		if args, err := procCmdline(pid); err == nil && slices.ContainsFunc(args, func(a string) bool { return strings.Contains(a, info.Dir) }) {
			out = append(out, fmt.Sprintf("process %d %q", pid, args))
		}
	}
	if points, err := cgroupMounts(); err == nil {
		for _, p := range points {
			for _, cg := range info.Cgroups {
				if _, err := os.Stat(filepath.Join(p, cg)); err == nil {
					out = append(out, "cgroup "+filepath.Join(p, cg))
				}
			}
		}
	}
	links := []string{info.Bridge}
	for _, n := range info.Nodes {
		links = append(links, n.HostLink)
	}
	for _, l := range links {
		if _, err := netlink.LinkByName(l); err == nil {
			out = append(out, "link "+l)
		}
	}
	if ms, err := mountsUnder(info.Dir); err == nil {
		for _, m := range ms {
			out = append(out, "mount "+m)
		}
	}
	files, _ := os.ReadDir(info.Dir)
	for _, f := range files {
		if !slices.Contains(keptEntries, f.Name()) {
			out = append(out, "file "+filepath.Join(info.Dir, f.Name()))
		}
	}
	return out
}
