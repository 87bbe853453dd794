//go:build linux

package netops_test

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/railyard-io/railyard/internal/netops"
	"github.com/railyard-io/railyard/internal/netops/netnstest"
	"github.com/railyard-io/railyard/internal/sysfs"
)

// TestWithSysfsShowsThePodsNamespaceVeth: the sysfs WithSysfs mounts in a
// pod's namespace lists the pod's netdevs only (the kernel tags class/net
// and class/infiniband entries with their namespace: an RDMA device moved
// into a pod in exclusive mode is seen the same way); the host's does not
// list the moved veth; nothing stays mounted on the host.
func TestWithSysfsShowsThePodsNamespaceVeth(t *testing.T) {
	netnstest.Require(t)
	peer, pod := netnstest.NewNetns(t, "speer"), netnstest.NewNetns(t, "spod")
	a := netnstest.Name("sv")
	netnstest.NewVeth(t, a, peer)
	lx := netops.Linux{}
	must(t, lx.MoveLink(ctx, netops.Host, a, pod))
	list := func(netns string) []string {
		t.Helper()
		var names []string
		var root string
		must(t, lx.WithSysfs(ctx, netns, func(r string) error {
			var err error
			root = r
			names, err = sysfs.New(r).List("class/net")
			return err
		}))
		if b, err := os.ReadFile("/proc/self/mountinfo"); err != nil || strings.Contains(string(b), root) {
			t.Errorf("%s still mounted on the host (%v)", root, err)
		}
		if _, err := os.Stat(root); !os.IsNotExist(err) {
			t.Errorf("mount point %s left: %v", root, err)
		}
		return names
	}
	if diff := cmp.Diff([]string{"lo", a}, list(pod)); diff != "" {
		t.Errorf("class/net in the pod (-want +got):\n%s", diff)
	}
	if host := list(netops.Host); slices.Contains(host, a) || !slices.Contains(host, "lo") {
		t.Errorf("class/net on the host %v: want lo and not %s", host, a)
	}
	if err := lx.WithSysfs(ctx, "/var/run/netns/railyard-none", func(string) error { return nil }); err == nil {
		t.Error("WithSysfs of a missing namespace succeeded")
	}
}
