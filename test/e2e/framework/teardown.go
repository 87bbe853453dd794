//go:build e2e

package framework

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// teardown removes everything a run created, by PID and by path. It is safe
// to call on a half-started run and on a run whose test binary died. It keeps
// going after errors and returns them all.
func teardown(s *runState) error {
	if !strings.HasPrefix(filepath.Base(s.RunDir), runDirPrefix) || !filepath.IsAbs(s.RunDir) {
		return fmt.Errorf("teardown: %q is not a run directory", s.RunDir)
	}
	var errs []error
	add := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	// 1. Container processes: everything in the run's cgroups.
	add(killCgroupProcesses(s.CgroupName))
	// 2. containerd shims, which outlive containerd and write no pid file.
	add(killShims(s.ContainerdSocket))
	// 3. The components and helper processes the run started.
	add(killTracked(s.Processes))
	// 4. Mounts under the run directory (rootfs, shm, netns, volumes).
	add(unmountUnder(s.RunDir))
	// 5. The run's cgroups.
	add(removeCgroups(s.CgroupName))
	// 6. The bridge (and any veth left on it).
	if s.Bridge != "" {
		add(deleteBridge(s.Bridge))
	}
	// 7. Entries the run added to the kubelet's and containerd's fixed paths.
	add(cleanHostDirs(s))
	// 8. The run directory itself, unless something is still mounted in it.
	if mounts, err := mountsUnder(s.RunDir); err != nil || len(mounts) > 0 {
		add(errors.Join(fmt.Errorf("teardown: keeping %s: still mounted: %v", s.RunDir, mounts), err))
	} else if err := os.RemoveAll(s.RunDir); err != nil {
		add(fmt.Errorf("teardown: %w", err))
	}
	return errors.Join(errs...)
}

// cgroupMounts returns the mount points of every cgroup (v1) and cgroup2
// hierarchy.
func cgroupMounts() ([]string, error) {
	mounts, err := readMountInfo()
	if err != nil {
		return nil, err
	}
	var out []string
	for _, m := range mounts {
		if m.fstype == "cgroup" || m.fstype == "cgroup2" {
			out = append(out, m.point)
		}
	}
	return out, nil
}

// createCgroups creates /<name> in every cgroup hierarchy, which the kubelet
// needs before it accepts cgroupRoot=/<name>.
func createCgroups(name string) error {
	points, err := cgroupMounts()
	if err != nil {
		return fmt.Errorf("create cgroups: %w", err)
	}
	for _, p := range points {
		if err := os.Mkdir(filepath.Join(p, name), 0o755); err != nil && !os.IsExist(err) {
			return fmt.Errorf("create cgroups: %w", err)
		}
	}
	return nil
}

// cgroupDirs lists every directory of /<name> in every hierarchy, deepest
// first.
func cgroupDirs(name string) ([]string, error) {
	// Only ever walk (and kill in, and remove) cgroups this framework names.
	if !strings.HasPrefix(name, runDirPrefix) || strings.ContainsAny(name, "/.") || len(name) == len(runDirPrefix) {
		return nil, fmt.Errorf("cgroup name %q: not a %s* name", name, runDirPrefix)
	}
	points, err := cgroupMounts()
	if err != nil {
		return nil, err
	}
	var dirs []string
	for _, p := range points {
		root := filepath.Join(p, name)
		_ = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, path)
			}
			return nil
		})
	}
	sort.Slice(dirs, func(i, j int) bool { return strings.Count(dirs[i], "/") > strings.Count(dirs[j], "/") })
	return dirs, nil
}

func killCgroupProcesses(name string) error {
	if name == "" {
		return nil
	}
	for attempt := 0; attempt < 50; attempt++ {
		dirs, err := cgroupDirs(name)
		if err != nil {
			return fmt.Errorf("kill cgroup processes: %w", err)
		}
		found := 0
		for _, d := range dirs {
			data, err := os.ReadFile(filepath.Join(d, "cgroup.procs"))
			if err != nil {
				continue
			}
			for _, f := range strings.Fields(string(data)) {
				if pid, err := strconv.Atoi(f); err == nil && pid > 1 && pid != os.Getpid() {
					found++
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
			}
		}
		if found == 0 {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("kill cgroup processes: processes remain under /%s", name)
}

func removeCgroups(name string) error {
	if name == "" {
		return nil
	}
	var last error
	for attempt := 0; attempt < 20; attempt++ {
		dirs, err := cgroupDirs(name)
		if err != nil {
			return fmt.Errorf("remove cgroups: %w", err)
		}
		if len(dirs) == 0 {
			return nil
		}
		last = nil
		for _, d := range dirs {
			if err := syscall.Rmdir(d); err != nil && !errors.Is(err, syscall.ENOENT) {
				last = fmt.Errorf("remove cgroup %s: %w", d, err)
			}
		}
		if last == nil {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return last
}

// procCmdline returns the NUL-separated command line of pid.
func procCmdline(pid int) ([]string, error) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		return nil, err
	}
	data = bytes.TrimRight(data, "\x00")
	if len(data) == 0 {
		return nil, nil
	}
	return strings.Split(string(data), "\x00"), nil
}

// shimPIDs finds containerd shims started for socket: processes whose
// command line has "-address <socket>".
func shimPIDs(socket string) []int {
	if socket == "" {
		return nil
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		args, err := procCmdline(pid)
		if err != nil {
			continue
		}
		for i := 0; i+1 < len(args); i++ {
			if args[i] == "-address" && args[i+1] == socket {
				pids = append(pids, pid)
				break
			}
		}
	}
	return pids
}

func killShims(socket string) error {
	for attempt := 0; attempt < 50; attempt++ {
		pids := shimPIDs(socket)
		if len(pids) == 0 {
			return nil
		}
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("kill shims of %s: still running: %v", socket, shimPIDs(socket))
}

// killTracked kills each tracked process whose command line is still the one
// recorded (so a reused PID is left alone), newest first.
func killTracked(procs []trackedProcess) error {
	var errs []error
	for i := len(procs) - 1; i >= 0; i-- {
		p := procs[i]
		if !stillOurs(p) {
			continue
		}
		_ = syscall.Kill(p.PID, syscall.SIGTERM)
		gone := waitGone(p.PID, p.Cmdline, 5*time.Second)
		if !gone {
			_ = syscall.Kill(p.PID, syscall.SIGKILL)
			if !waitGone(p.PID, p.Cmdline, 5*time.Second) {
				errs = append(errs, fmt.Errorf("kill pid %d (%s): still running", p.PID, p.Cmdline[0]))
			}
		}
	}
	return errors.Join(errs...)
}

// stillOurs reports whether p's PID still runs p's command line. A read
// of /proc/<pid>/cmdline that fails or comes back empty is asked again a
// few times before the process counts as gone: a loaded machine's teardown
// must not leave a tracked process running for one bad read.
func stillOurs(p trackedProcess) bool {
	for try := range 5 {
		args, err := procCmdline(p.PID)
		if errors.Is(err, os.ErrNotExist) {
			return false
		}
		if err == nil && len(args) > 0 {
			return slices.Equal(args, p.Cmdline)
		}
		time.Sleep(time.Duration(try+1) * 20 * time.Millisecond)
	}
	return false
}

func waitGone(pid int, cmdline []string, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		args, err := procCmdline(pid)
		if err != nil || !slices.Equal(args, cmdline) {
			return true
		}
		// A zombie child of ours keeps its cmdline empty; treat as gone.
		if data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat"); err == nil && bytes.Contains(data, []byte(") Z ")) {
			return true
		}
		time.Sleep(50 * time.Millisecond)
	}
	return false
}

type mountEntry struct {
	point  string
	fstype string
}

func readMountInfo() ([]mountEntry, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("mountinfo: %w", err)
	}
	defer f.Close()
	var out []mountEntry
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		// id parent major:minor root point options [optional...] - fstype source super
		fields := strings.Fields(sc.Text())
		sep := slices.Index(fields, "-")
		if len(fields) < 5 || sep < 0 || sep+1 >= len(fields) {
			continue
		}
		out = append(out, mountEntry{point: unescapeMount(fields[4]), fstype: fields[sep+1]})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("mountinfo: %w", err)
	}
	return out, nil
}

// unescapeMount undoes the octal escapes (\040 etc.) of mountinfo paths.
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func mountsUnder(dir string) ([]string, error) {
	if dir == "" || dir == "/" {
		return nil, fmt.Errorf("mounts under %q: refusing", dir)
	}
	mounts, err := readMountInfo()
	if err != nil {
		return nil, err
	}
	prefix := filepath.Clean(dir) + "/"
	var out []string
	for _, m := range mounts {
		if strings.HasPrefix(m.point, prefix) || m.point == filepath.Clean(dir) {
			out = append(out, m.point)
		}
	}
	sort.Slice(out, func(i, j int) bool { return len(out[i]) > len(out[j]) })
	return out, nil
}

// unmountUnder lazily unmounts every mount point under dir, deepest first,
// until none is left.
func unmountUnder(dir string) error {
	for attempt := 0; attempt < 10; attempt++ {
		mounts, err := mountsUnder(dir)
		if err != nil {
			return fmt.Errorf("unmount under %s: %w", dir, err)
		}
		if len(mounts) == 0 {
			return nil
		}
		for _, m := range mounts {
			_ = syscall.Unmount(m, syscall.MNT_DETACH)
		}
	}
	mounts, _ := mountsUnder(dir)
	return fmt.Errorf("unmount under %s: still mounted: %v", dir, mounts)
}

// cleanHostDirs removes what the run added to hostDirs.
func cleanHostDirs(s *runState) error {
	var errs []error
	sandboxes := sandboxIDs(s.RunDir)
	for i := len(hostDirs) - 1; i >= 0; i-- {
		hd := hostDirs[i]
		entries, err := os.ReadDir(hd.path)
		if err != nil {
			continue
		}
		before := s.Before[hd.path]
		for _, e := range entries {
			if slices.Contains(before, e.Name()) || (hd.ours != nil && !hd.ours(e.Name(), sandboxes)) {
				continue
			}
			if err := os.RemoveAll(filepath.Join(hd.path, e.Name())); err != nil {
				errs = append(errs, fmt.Errorf("clean %s: %w", hd.path, err))
			}
		}
		if slices.Contains(s.Missing, hd.path) {
			// Only if empty: something else may have started using it.
			_ = os.Remove(hd.path)
		}
	}
	return errors.Join(errs...)
}

// sandboxIDs lists the pod sandboxes the run's containerd ever made (the
// CRI plugin keeps a directory per sandbox under its root and state dirs).
func sandboxIDs(runDir string) []string {
	var ids []string
	for _, sub := range []string{"root", "state"} {
		matches, _ := filepath.Glob(filepath.Join(runDir, "containerd", sub, "io.containerd.grpc.v1.cri", "sandboxes", "*"))
		for _, m := range matches {
			if id := filepath.Base(m); len(id) >= 12 && !slices.Contains(ids, id) {
				ids = append(ids, id)
			}
		}
	}
	return ids
}
