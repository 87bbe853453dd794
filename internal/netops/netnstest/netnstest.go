package netnstest

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/containernetworking/plugins/pkg/ns"
)

var seq atomic.Int64

// Require skips the test unless it runs as root with iproute2's ip.
func Require(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to create network namespaces and veth pairs")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("needs iproute2's ip command (hack/install-deps.sh)")
	}
}

// Name returns an interface-sized name (at most 15 bytes), unique among
// the test processes running at once: "ry", the process ID in base 36
// padded to 5 digits (Linux's largest, 4194304, is "2hdts"), a per-process
// sequence in base 36 padded to 2 (it wraps after 1296 names), then the
// first 6 bytes of tag. The fixed widths keep the unique part whole:
// "ry<pid><n>" once concatenated decimals, and pid 7192's 42nd name was
// pid 71924's 2nd ("ry719242vf"), so two `go test` runs beside each
// other deleted each other's veths.
func Name(tag string) string {
	n := fmt.Sprintf("ry%05s%02s%s", strconv.FormatInt(int64(os.Getpid()), 36), strconv.FormatInt((seq.Add(1)-1)%(36*36), 36), tag)
	if len(n) > 15 {
		n = n[:15]
	}
	return n
}

// IP runs ip(8) with args and fails the test on error.
func IP(t testing.TB, args ...string) string {
	t.Helper()
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// NewNetns creates a named network namespace and returns its path; it is
// deleted when the test ends.
func NewNetns(t testing.TB, tag string) string {
	t.Helper()
	name := Name("ns" + tag)
	IP(t, "netns", "add", name)
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", name).Run() })
	return "/var/run/netns/" + name
}

// NewVeth creates a veth pair with end name in the host namespace and its
// peer inside peerNetns (a path from NewNetns), so the host end stands in
// for a VF. Deleting either end, or the namespace holding one, removes both.
func NewVeth(t testing.TB, name, peerNetns string) {
	t.Helper()
	peer := Name("p")
	IP(t, "link", "add", name, "type", "veth", "peer", "name", peer)
	t.Cleanup(func() { _ = exec.Command("ip", "link", "del", name).Run() })
	IP(t, "link", "set", peer, "netns", strings.TrimPrefix(peerNetns, "/var/run/netns/"))
}

// NewVethPeer is NewVeth, returning the name of the peer end in
// peerNetns.
func NewVethPeer(t testing.TB, name, peerNetns string) string {
	t.Helper()
	peer := Name("p")
	IP(t, "link", "add", name, "type", "veth", "peer", "name", peer)
	t.Cleanup(func() { _ = exec.Command("ip", "link", "del", name).Run() })
	IP(t, "link", "set", peer, "netns", strings.TrimPrefix(peerNetns, "/var/run/netns/"))
	return peer
}

// IPIn runs ip(8) with args inside namespace netns (a path from
// NewNetns) and fails the test on error.
func IPIn(t testing.TB, netns string, args ...string) string {
	t.Helper()
	return IP(t, append([]string{"-n", strings.TrimPrefix(netns, "/var/run/netns/")}, args...)...)
}

// Do runs f on a thread inside namespace netns: sockets f opens live
// there.
func Do(t testing.TB, netns string, f func() error) {
	t.Helper()
	if err := ns.WithNetNSPath(netns, func(ns.NetNS) error { return f() }); err != nil {
		t.Fatalf("in %s: %v", netns, err)
	}
}
