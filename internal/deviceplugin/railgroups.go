package deviceplugin

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/railyard-io/railyard/internal/podresources/podlist"
)

// NCCLConfPath is where a container finds its merged NCCL configuration
// in "merged" mode; NCCL_CONF_FILE points there.
const NCCLConfPath = "/etc/railyard/nccl.conf"

// NCCLCDIKind is the CDI kind of the per-container devices whose spec sets
// NCCL_IB_HCA in "merged" mode with a CDI spec directory.
const NCCLCDIKind = "railyard.io/nccl"

// joinWindow bounds the time between two Allocate calls of one container.
// kubelet makes them back to back; anything slower starts a new group.
const joinWindow = 30 * time.Second

// RailGroups gives every container one NCCL configuration naming the RDMA
// devices of all the pools it takes devices from, whatever order kubelet
// allocates the pools in. The agent's pools share one RailGroups.
//
// kubelet allocates a container's resources one after the other and
// records each in PodResources as soon as its Allocate returns. The first
// pool's Allocate starts a group (named after its first device) and
// returns a mount of the group's file; a later pool's Allocate finds the
// container holding the previous allocation's devices in PodResources,
// joins that group, returns a mount of the same file, and rewrites the
// file (and the group's CDI spec) with the merged list. Every pool's
// response of one container thus carries the same mount, the same
// NCCL_CONF_FILE and the same CDI device, and kubelet has nothing to
// choose between. The runtime reads the file and the CDI spec only at
// CreateContainer, after all Allocates.
//
// A later allocation joins the previous one only when that is certain
// enough: the previous allocation is from another pool, less than 30 s
// old, no pod appeared in PodResources since (kubelet admits pods one at
// a time, so a new pod means kubelet moved on), exactly one container
// holds the previous allocation's devices, it holds none of this pool's,
// and it is the only container of its pod (with two containers kubelet
// may have moved to the next one). Otherwise the allocation starts its
// own group and Joined.Note says why.
type RailGroups struct {
	lister  podlist.Lister
	files   groupFiles
	timeout time.Duration
	now     func() time.Time

	mu   sync.Mutex
	last *allocation
}

// allocation is the record of the last Allocate.
type allocation struct {
	resource string
	ids      []string
	group    string
	pods     map[string]bool // namespace/name of every pod PodResources listed then
	at       time.Time
}

// Joined is what Join decided for one allocation.
type Joined struct {
	// Group names the container's group; ConfHostPath is its NCCL
	// configuration file on the host; CDIName is its CDI device
	// ("" without a CDI spec directory).
	Group, ConfHostPath, CDIName string
	// HCAs are the RDMA devices of every allocation in the group, in
	// rail order.
	HCAs []string
	// With lists the resources of the earlier allocations joined (empty
	// when this allocation started the group).
	With []string
	// Note says why an allocation did not join the previous one when
	// that was worth a log line.
	Note string
}

// NewRailGroups keeps its state under stateDir/nccl and, when cdiDir is
// not empty, writes a CDI spec per group there. It rewrites the CDI specs
// of the groups found in stateDir (cdiDir may be a tmpfs that a reboot
// emptied while kubelet still holds the CDI names).
func NewRailGroups(lister podlist.Lister, stateDir, cdiDir string) (*RailGroups, error) {
	g := &RailGroups{lister: lister, files: groupFiles{dir: stateDir + "/nccl", cdiDir: cdiDir},
		timeout: 2 * time.Second, now: time.Now}
	if err := g.files.restore(); err != nil {
		return nil, err
	}
	return g, nil
}

// Join records an allocation of devs from resource and returns the
// group of the container it is for, with the group's files written.
func (g *RailGroups) Join(ctx context.Context, resource string, devs []Device) (Joined, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	ids := make([]string, len(devs))
	for i, d := range devs {
		ids[i] = d.ID
	}
	slices.Sort(ids)
	lctx, cancel := context.WithTimeout(ctx, g.timeout)
	resp, err := g.lister.List(lctx)
	cancel()
	now := g.now()
	pods := map[string]bool{}
	var group, note string
	if err != nil {
		note = "pod resources unavailable, not merged with an earlier pool: " + err.Error()
	} else {
		for _, p := range resp {
			pods[p.Namespace+"/"+p.Name] = true
		}
		group, note = g.match(resp, resource, pods, now)
	}
	var st groupState
	if group != "" {
		if st, err = g.files.load(group); err != nil {
			note = fmt.Sprintf("group %s unreadable, starting a new one: %v", group, err)
			group = ""
		}
	}
	if group == "" {
		group = groupName(resource, ids[0])
		st = groupState{Group: group}
	}
	st.Members = slices.DeleteFunc(st.Members, func(m groupMember) bool { return m.Resource == resource })
	var with []string
	for _, m := range st.Members {
		with = append(with, m.Resource)
	}
	st.Members = append(st.Members, member(resource, devs))
	hcas := st.hcas()
	conf, err := g.files.write(st, hcas)
	if err != nil {
		return Joined{}, err
	}
	g.last = &allocation{resource: resource, ids: ids, group: group, pods: pods, at: now}
	j := Joined{Group: group, ConfHostPath: conf, HCAs: hcas, With: with, Note: note}
	if g.files.cdiDir != "" {
		j.CDIName = NCCLCDIKind + "=" + group
	}
	return j, nil
}

// match returns the group the allocation of resource joins ("" = none)
// and, when worth logging, why it joins none.
func (g *RailGroups) match(resp []podlist.Pod, resource string, pods map[string]bool, now time.Time) (string, string) {
	last := g.last
	if last == nil || last.resource == resource || now.Sub(last.at) > joinWindow {
		return "", ""
	}
	for p := range pods {
		if !last.pods[p] {
			return "", "" // kubelet admitted another pod since
		}
	}
	type holder struct {
		pod *podlist.Pod
		c   *podlist.Container
	}
	var holders []holder
	for i := range resp {
		p := &resp[i]
		for j := range p.Containers {
			if c := &p.Containers[j]; holdsAll(c, last.resource, last.ids) {
				holders = append(holders, holder{p, c})
			}
		}
	}
	if len(holders) != 1 {
		return "", fmt.Sprintf("%d containers hold the devices %v of %s just allocated; not merged with it", len(holders), last.ids, last.resource)
	}
	h := holders[0]
	if holdsAny(h.c, resource) {
		return "", "" // that container has this pool already: a new container
	}
	if n := len(h.pod.Containers); n > 1 {
		return "", fmt.Sprintf("pod %s/%s has %d containers: cannot tell whether this allocation is for %s too; not merged with %s",
			h.pod.Namespace, h.pod.Name, n, h.c.Name, last.resource)
	}
	return last.group, ""
}

func holdsAll(c *podlist.Container, resource string, ids []string) bool {
	var have []string
	for _, d := range c.Devices {
		if d.Resource == resource {
			have = append(have, d.IDs...)
		}
	}
	for _, id := range ids {
		if !slices.Contains(have, id) {
			return false
		}
	}
	return len(ids) > 0
}

func holdsAny(c *podlist.Container, resource string) bool {
	for _, d := range c.Devices {
		if d.Resource == resource && len(d.IDs) > 0 {
			return true
		}
	}
	return false
}

// groupName names a group after the resource and first device of the
// allocation that started it: unique among running containers, since a
// device belongs to one container at a time, and bounded in number by
// the devices of the node. Only [A-Za-z0-9_.-] remain (file and CDI
// device names).
func groupName(resource, firstID string) string {
	clean := func(s string) string {
		return strings.Map(func(r rune) rune {
			switch {
			case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '-':
				return r
			}
			return '_'
		}, s)
	}
	return clean(resource) + "_" + clean(firstID)
}
