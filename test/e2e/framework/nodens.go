//go:build e2e

package framework

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// A node of a multi-node cluster is a PID 1 of its own (NodeInit) started
// by `unshare --mount --net --pid --fork --mount-proc --kill-child`: its
// mount namespace gets private copies of the directories kubelet,
// containerd and the CNI library hard-code, its network namespace a veth
// to the cluster bridge, and containerd and kubelet are started into its
// namespaces with nsenter. When the unshare process dies, for whatever
// reason, its child (the node's PID 1) gets SIGKILL, and the kernel kills
// every process of the node's PID namespace with it; the node's mounts and
// links go with its namespaces.

// privateDirs are the host paths each node sees as a directory of its own
// (a bind mount in its mount namespace): kubelet's fixed directories
// (device-plugins/ whatever --root-dir says), the CNI library's cache,
// containerd's shim sockets under /run, the pods' logs, and Railyard's
// own state (the agent's and railyard-cni's defaults: checkpoints and the
// binding view are a node's, never shared).
var privateDirs = []struct{ host, sub string }{
	{"/var/lib/kubelet", "kubelet"},
	{"/var/lib/cni", "cni-lib"},
	{"/run", "run"},
	{"/var/log", "log"},
	{"/var/lib/railyard", "railyard"},
}

// NodeInit is the node's PID 1 (the cluster command's node-init): it reaps
// every orphan reparented to it (containerd's shims) until SIGTERM or
// SIGINT. It never returns an error but for a bad start.
func NodeInit() error {
	if os.Getpid() != 1 {
		return errors.New("node-init: not PID 1 of a PID namespace")
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		for {
			var ws syscall.WaitStatus
			pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
		select {
		case <-sigs:
			return nil
		case <-tick.C:
		}
	}
}

// nsNode is one node: its names, addresses and directories, and once
// started the PID (in the host's PID namespace) of its PID 1.
type nsNode struct {
	NodeInfo
	init   *Process // unshare
	pid    int      // the node's PID 1, as the host sees it
	ctrd   containerdPaths
	kubelt kubeletOptions
}

// enter is the nsenter prefix that runs a command in the node's mount,
// network and PID namespaces.
func (n *nsNode) enter(ns ...string) []string {
	args := []string{"nsenter", "--target", strconv.Itoa(n.pid)}
	for _, s := range ns {
		args = append(args, "--"+s)
	}
	return append(args, "--")
}

// run runs a short command in the node's namespaces (ns: mount, net, pid).
func (n *nsNode) run(ctx context.Context, ns []string, args ...string) error {
	full := append(n.enter(ns...), args...)
	out, err := exec.CommandContext(ctx, full[0], full[1:]...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("node %s: %s: %w: %s", n.Name, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// startInit starts the node's namespaces and PID 1 and finds that PID.
func (n *nsNode) startInit(ctx context.Context, nodeInit []string, logPath string) error {
	args := append([]string{"--mount", "--net", "--pid", "--fork", "--mount-proc", "--kill-child", "--propagation", "private", "--"}, nodeInit...)
	args = append(args, n.Dir)
	p, err := startProcess("node-"+n.Name, "unshare", args, nil, logPath)
	if err != nil {
		return err
	}
	n.init = p
	want := append(slices.Clone(nodeInit), n.Dir)
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return p.waitFor(wctx, "node "+n.Name+" PID 1", 20*time.Millisecond, func(context.Context) error {
		kids, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", p.PID(), p.PID()))
		if err != nil {
			return err
		}
		f := strings.Fields(string(kids))
		if len(f) != 1 {
			return fmt.Errorf("unshare has children %q", kids)
		}
		pid, err := strconv.Atoi(f[0])
		if err != nil {
			return err
		}
		// Until it execs, the child is still unshare.
		if args, err := procCmdline(pid); err != nil || !slices.Equal(args, want) {
			return fmt.Errorf("child %d runs %q", pid, args)
		}
		n.pid = pid
		return nil
	})
}

// mountPrivate binds the node's own directories over the host paths in
// its mount namespace (mkdirs lists host mount points to create first).
func (n *nsNode) mountPrivate(ctx context.Context, shared map[string]string) error {
	binds := map[string]string{}
	for _, d := range privateDirs {
		binds[d.host] = filepath.Join(n.Dir, d.sub)
	}
	for target, sub := range shared {
		binds[target] = filepath.Join(n.Dir, sub)
	}
	targets := make([]string, 0, len(binds))
	for t := range binds {
		targets = append(targets, t)
	}
	slices.Sort(targets)
	for _, t := range targets {
		if err := os.MkdirAll(binds[t], 0o755); err != nil {
			return fmt.Errorf("node %s: %w", n.Name, err)
		}
		if err := n.run(ctx, []string{"mount"}, "mount", "--bind", binds[t], t); err != nil {
			return err
		}
	}
	return nil
}

// setupNetwork cables the node to the cluster bridge (hostLink on the
// host, eth0 in the node) and configures the node's side: loopback, its
// IP, a default route through the bridge's address, forwarding (pods route
// through the node), bridged pod traffic through the node's netfilter (so
// kube-proxy's rules see a pod reaching a Service whose endpoint is on the
// same bridge) and a route to every other node's pod CIDR. The host routes
// the node's pod CIDR to it: Service traffic that kube-proxy sends to the
// apiserver on the host keeps its pod source address.
func (n *nsNode) setupNetwork(ctx context.Context, bridge, gateway string, prefix int, others []NodeInfo) error {
	host := exec.CommandContext(ctx, "ip", "link", "add", "name", n.HostLink, "type", "veth", "peer", "name", "eth0", "netns", strconv.Itoa(n.pid))
	if out, err := host.CombinedOutput(); err != nil {
		return fmt.Errorf("node %s: veth: %w: %s", n.Name, err, out)
	}
	for _, args := range [][]string{
		{"ip", "link", "set", n.HostLink, "master", bridge},
		{"ip", "link", "set", n.HostLink, "up"},
		{"ip", "route", "add", n.PodCIDR, "via", n.IP, "dev", bridge},
	} {
		if out, err := exec.CommandContext(ctx, args[0], args[1:]...).CombinedOutput(); err != nil {
			return fmt.Errorf("node %s: %s: %w: %s", n.Name, strings.Join(args, " "), err, out)
		}
	}
	cmds := [][]string{
		{"ip", "link", "set", "lo", "up"},
		{"ip", "addr", "add", n.IP + "/" + strconv.Itoa(prefix), "dev", "eth0"},
		{"ip", "link", "set", "eth0", "up"},
		{"ip", "route", "add", "default", "via", gateway},
		{"sysctl", "-q", "-w", "net.ipv4.ip_forward=1"},
		{"sysctl", "-q", "-w", "net.bridge.bridge-nf-call-iptables=1"},
	}
	for _, o := range others {
		if o.Name != n.Name {
			cmds = append(cmds, []string{"ip", "route", "add", o.PodCIDR, "via", o.IP})
		}
	}
	for _, c := range cmds {
		if err := n.run(ctx, []string{"net"}, c...); err != nil {
			return err
		}
	}
	return nil
}

// copyFile copies a regular file (a CNI plugin into a node's bin dir).
func copyFile(src, dst string, mode os.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
