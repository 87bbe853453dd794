//go:build linux

package netops

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// netlinkSockets counts this process's open netlink sockets by protocol
// (from /proc/self/net/netlink, matched against our socket inodes).
func netlinkSockets(t *testing.T) map[string]int {
	t.Helper()
	mine := map[string]bool{}
	fds, err := filepath.Glob("/proc/self/fd/*")
	if err != nil {
		t.Fatal(err)
	}
	for _, fd := range fds {
		target, err := os.Readlink(fd)
		if err == nil && strings.HasPrefix(target, "socket:[") {
			mine[strings.TrimSuffix(strings.TrimPrefix(target, "socket:["), "]")] = true
		}
	}
	b, err := os.ReadFile("/proc/self/net/netlink")
	if err != nil {
		t.Skipf("no /proc/self/net/netlink: %v", err)
	}
	out := map[string]int{}
	for _, line := range strings.Split(string(b), "\n")[1:] {
		f := strings.Fields(line)
		// sk Eth Pid Groups Rmem Wmem Dump Locks Drops Inode
		if len(f) >= 10 && mine[f[9]] {
			out[f[1]]++
		}
	}
	return out
}

// TestHandleOpensOnlyTheRouteFamily: on a real kernel, the handle every
// link operation uses opens one NETLINK_ROUTE socket and no XFRM (6) or
// netfilter (12) socket, whose modules may be missing on a node (ADD then
// failed with "protocol not supported") or get loaded for nothing.
func TestHandleOpensOnlyTheRouteFamily(t *testing.T) {
	before := netlinkSockets(t)
	h, done, err := Linux{}.handle(Host)
	if err != nil {
		t.Fatal(err)
	}
	defer done()
	_ = h
	after := netlinkSockets(t)
	added := map[string]int{}
	for proto, n := range after {
		if d := n - before[proto]; d > 0 {
			added[proto] = d
		}
	}
	if len(added) != 1 || added["0"] != 1 {
		t.Fatalf("new netlink sockets by protocol = %v, want exactly one NETLINK_ROUTE (0)", added)
	}
}

// TestOperationKeepsOneHandlePerNamespace: within an operation every call
// in one namespace reuses one netlink socket; Close releases it.
func TestOperationKeepsOneHandlePerNamespace(t *testing.T) {
	op := NewOperation()
	before := netlinkSockets(t)
	for range 5 {
		if _, err := op.LinkByAlias(t.Context(), Host, "no such alias railyard"); err == nil {
			t.Fatal("found a link by an alias nobody has")
		}
	}
	during := netlinkSockets(t)
	if d := during["0"] - before["0"]; d != 1 {
		t.Errorf("5 calls in one operation opened %d route sockets, want 1", d)
	}
	op.Close()
	if after := netlinkSockets(t); after["0"] != before["0"] {
		t.Errorf("route sockets after Close: %d, before the operation %d", after["0"], before["0"])
	}
}
