//go:build e2e

package framework

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"strings"
)

// The rail fabric is a network namespace of its own (held by a sleeping
// process started with `unshare --net`, so it goes when that process does)
// with one bridge per rail, the rail's leaf switch. NIC r of every GPU node
// is a veth whose peer is a port of leaf r, as in a rail-optimized cluster.
// Each leaf also has the address .254 of its rail's subnet: the spine. With
// the spine off (forwarding off in the fabric namespace, the default) the
// rails are isolated L2 segments; with it on, the fabric routes between
// them, for pods that route another rail's subnet through their leaf's .254.

// RailInfo is one rail: its index, leaf bridge, subnet and spine address.
type RailInfo struct {
	Index  int    `json:"index"`
	Leaf   string `json:"leaf"`
	Subnet string `json:"subnet"`
	Spine  string `json:"spine"`
}

// railSubnet is rail r's subnet within the rails' /16.
func railSubnet(base *net.IPNet, r int) (subnet, spine string) {
	ip := base.IP.To4()
	return fmt.Sprintf("%d.%d.%d.0/24", ip[0], ip[1], r), fmt.Sprintf("%d.%d.%d.254", ip[0], ip[1], r)
}

// fabricRun runs a command in the fabric's network namespace.
func fabricRun(ctx context.Context, pid int, args ...string) error {
	full := append([]string{"--target", strconv.Itoa(pid), "--net", "--"}, args...)
	if out, err := exec.CommandContext(ctx, "nsenter", full...).CombinedOutput(); err != nil {
		return fmt.Errorf("fabric: %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// startFabric starts the fabric namespace and its leaves.
func startFabric(ctx context.Context, rails []RailInfo, logPath string) (*Process, error) {
	p, err := startProcess("fabric", "unshare", []string{"--net", "--", "sleep", "2147483647"}, nil, logPath)
	if err != nil {
		return nil, err
	}
	// unshare execs sleep in place: wait for the exec.
	for range 200 {
		if args, _ := procCmdline(p.PID()); len(args) > 0 && args[0] == "sleep" {
			break
		}
		if exited, _ := p.Exited(); exited {
			return nil, fmt.Errorf("fabric: unshare exited; see %s", logPath)
		}
		sleepShort()
	}
	cmds := [][]string{{"ip", "link", "set", "lo", "up"}, {"sysctl", "-q", "-w", "net.ipv4.ip_forward=0"}}
	for _, r := range rails {
		_, ipnet, _ := net.ParseCIDR(r.Subnet)
		ones, _ := ipnet.Mask.Size()
		cmds = append(cmds,
			[]string{"ip", "link", "add", r.Leaf, "type", "bridge"},
			[]string{"ip", "addr", "add", r.Spine + "/" + strconv.Itoa(ones), "dev", r.Leaf},
			[]string{"ip", "link", "set", r.Leaf, "up"})
	}
	for _, c := range cmds {
		if err := fabricRun(ctx, p.PID(), c...); err != nil {
			_ = p.Kill()
			return nil, err
		}
	}
	return p, nil
}

// cableRail connects a node's rail NIC (a veth named as its sysfs tree
// names the PF's netdev, in the node's network namespace) to a port of the
// rail's leaf in the fabric.
func cableRail(ctx context.Context, fabricPID int, n *nsNode, netdev string, r RailInfo) error {
	port := fmt.Sprintf("n%dr%d", n.Index, r.Index)
	add := exec.CommandContext(ctx, "ip", "link", "add", "name", netdev, "netns", strconv.Itoa(n.pid),
		"type", "veth", "peer", "name", port, "netns", strconv.Itoa(fabricPID))
	if out, err := add.CombinedOutput(); err != nil {
		return fmt.Errorf("cable %s %s to %s: %w: %s", n.Name, netdev, r.Leaf, err, out)
	}
	if err := fabricRun(ctx, fabricPID, "ip", "link", "set", port, "master", r.Leaf); err != nil {
		return err
	}
	return fabricRun(ctx, fabricPID, "ip", "link", "set", port, "up")
}

// SetSpine turns the spine of the cluster in dir on (the fabric routes
// between rails) or off (rails isolated).
func SetSpine(ctx context.Context, dir string, on bool) error {
	info, err := LoadClusterInfo(dir)
	if err != nil {
		return err
	}
	args, err := procCmdline(info.FabricPID)
	if err != nil || len(args) == 0 || args[0] != "sleep" {
		return errors.Join(fmt.Errorf("spine: the fabric's process %d is gone", info.FabricPID), err) // err is nil when it runs something else
	}
	v := "0"
	if on {
		v = "1"
	}
	return fabricRun(ctx, info.FabricPID, "sysctl", "-q", "-w", "net.ipv4.ip_forward="+v)
}
