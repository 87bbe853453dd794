//go:build e2e

package framework

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// hostDir is a fixed host path that the kubelet, containerd or the CNI
// library writes to whatever their configuration says. The framework
// snapshots its entries before starting; at teardown it removes entries that
// appeared since and that ours accepts (every new entry if ours is nil), and
// removes the directory itself if it did not exist before and is now empty.
type hostDir struct {
	path string
	ours func(name string, sandboxIDs []string) bool
}

// hostDirs are listed parents first; teardown walks them in reverse.
var hostDirs = []hostDir{
	{path: "/var/lib/kubelet"},
	{path: "/var/lib/kubelet/device-plugins"},
	{path: "/var/log/pods"},
	{path: "/var/log/containers"},
	// Shared with other CNI users: never remove entries of /var/lib/cni, and
	// in results/ only the cache files (<network>-<sandbox ID>-<ifname>) of
	// our network and of our pods' loopback.
	{path: "/var/lib/cni", ours: func(string, []string) bool { return false }},
	{path: "/var/lib/cni/results", ours: func(name string, ids []string) bool {
		if strings.HasPrefix(name, cniNetworkName+"-") {
			return true
		}
		for _, id := range ids {
			if strings.Contains(name, "-"+id+"-") {
				return true
			}
		}
		return false
	}},
	{path: "/run/containerd"},
	{path: "/run/containerd/s"},
}

// trackedProcess identifies a process the run started: its PID and its exact
// command line, so a later teardown never kills a process that reused the PID.
type trackedProcess struct {
	PID     int      `json:"pid"`
	Cmdline []string `json:"cmdline"`
}

// runState is everything teardown needs, persisted in the run directory so a
// later run can clean up after a run that was killed before its teardown.
type runState struct {
	RunDir           string              `json:"runDir"`
	OwnerPID         int                 `json:"ownerPID"`
	OwnerCmdline     []string            `json:"ownerCmdline"`
	CgroupName       string              `json:"cgroupName"` // e.g. railyard-e2e-1234
	Bridge           string              `json:"bridge"`
	ContainerdSocket string              `json:"containerdSocket"`
	Processes        []trackedProcess    `json:"processes"`
	Before           map[string][]string `json:"before"`  // host dir -> entries before the run
	Missing          []string            `json:"missing"` // host dirs that did not exist before the run
}

const stateFile = "state.json"

func (s *runState) save() error {
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return fmt.Errorf("save run state: %w", err)
	}
	tmp := filepath.Join(s.RunDir, stateFile+".tmp")
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return fmt.Errorf("save run state: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(s.RunDir, stateFile)); err != nil {
		return fmt.Errorf("save run state: %w", err)
	}
	return nil
}

func loadState(runDir string) (*runState, error) {
	data, err := os.ReadFile(filepath.Join(runDir, stateFile))
	if err != nil {
		return nil, fmt.Errorf("load run state: %w", err)
	}
	var s runState
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("load run state %s: %w", runDir, err)
	}
	if s.RunDir != runDir {
		return nil, fmt.Errorf("load run state %s: names run dir %q", runDir, s.RunDir)
	}
	return &s, nil
}

// snapshotHostDirs records the entries of hostDirs as they are now.
func (s *runState) snapshotHostDirs() error {
	s.Before = map[string][]string{}
	s.Missing = nil
	for _, hd := range hostDirs {
		d := hd.path
		entries, err := os.ReadDir(d)
		if os.IsNotExist(err) {
			s.Missing = append(s.Missing, d)
			continue
		}
		if err != nil {
			return fmt.Errorf("snapshot %s: %w", d, err)
		}
		names := make([]string, 0, len(entries))
		for _, e := range entries {
			names = append(names, e.Name())
		}
		sort.Strings(names)
		s.Before[d] = names
	}
	return nil
}
