//go:build linux

package netops_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/railyard-io/railyard/internal/netops"
	"github.com/railyard-io/railyard/internal/netops/netnstest"
)

// BenchmarkAttachSequenceVsOneMessage measures what railyard-cni's ADD
// would gain by sending its link changes as fewer rtnetlink messages. On
// real veths, alternating in every iteration, it attaches an up device to
// a pod as the ADD does today through netops (down; alias; temporary
// name; move; name in the pod; up: six RTM_SETLINKs, each after an
// RTM_GETLINK by name) and as three raw messages by index (down; alias and
// temporary name; move, name and up in one, which the kernel's do_setlink
// applies in that order). It reports each median and the ratio
// one-message/netops: about 0.98 on the 2-core machine (BENCHMARKS.md,
// "CNI plugin"), as the namespace move's wait for an RCU grace period
// dwarfs the rest, so netops keeps one operation per call.
func BenchmarkAttachSequenceVsOneMessage(b *testing.B) {
	netnstest.Require(b)
	peer := netnstest.NewNetns(b, "peer")
	type variant struct {
		dev, pod string
		attach   func(b *testing.B, dev, pod string)
		took     []time.Duration
	}
	variants := []*variant{
		{dev: netnstest.Name("sq"), pod: netnstest.NewNetns(b, "sq"), attach: attachThroughOps},
		{dev: netnstest.Name("om"), pod: netnstest.NewNetns(b, "om"), attach: attachInOneMessage},
	}
	for _, v := range variants {
		netnstest.NewVeth(b, v.dev, peer)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		order := variants
		if i%2 == 1 {
			order = []*variant{variants[1], variants[0]}
		}
		for _, v := range order {
			b.StopTimer()
			netnstest.IP(b, "link", "set", v.dev, "up")
			b.StartTimer()
			start := time.Now()
			v.attach(b, v.dev, v.pod)
			v.took = append(v.took, time.Since(start))
			b.StopTimer()
			if got := netnstest.IPIn(b, v.pod, "-o", "link", "show", "net1"); !strings.Contains(got, ",UP") || !strings.Contains(got, "alias railyard:bench") {
				b.Fatalf("after the attach, the pod has %q, want net1 up with the alias", got)
			}
			netnstest.IPIn(b, v.pod, "link", "set", "net1", "down")
			netnstest.IPIn(b, v.pod, "link", "set", "net1", "name", v.dev)
			netnstest.IPIn(b, v.pod, "link", "set", v.dev, "netns", "1")
			b.StartTimer()
		}
	}
	b.StopTimer()
	seq, one := medianOf(variants[0].took), medianOf(variants[1].took)
	b.ReportMetric(float64(seq)/1e6, "netops-ms")
	b.ReportMetric(float64(one)/1e6, "one-message-ms")
	b.ReportMetric(float64(one)/float64(seq), "ratio")
}

// attachThroughOps is the ADD's sequence in internal/cni's attach and
// finish, without the VF and RDMA steps a veth has no use for.
func attachThroughOps(b *testing.B, dev, pod string) {
	o := netops.NewOperation()
	defer o.Close()
	steps := []func() error{
		func() error { return o.SetLinkUp(ctx, netops.Host, dev, false) },
		func() error { return o.SetAlias(ctx, netops.Host, dev, "railyard:bench") },
		func() error { return o.RenameLink(ctx, netops.Host, dev, "rybench") },
		func() error { return o.MoveLink(ctx, netops.Host, "rybench", pod) },
		func() error { return o.RenameLink(ctx, pod, "rybench", "net1") },
		func() error { return o.SetLinkUp(ctx, pod, "net1", true) },
	}
	for _, step := range steps {
		if err := step(); err != nil {
			b.Fatal(err)
		}
	}
}

// attachInOneMessage reaches the same state with three RTM_SETLINKs by
// index.
func attachInOneMessage(b *testing.B, dev, pod string) {
	l, err := netlink.LinkByName(dev)
	if err != nil {
		b.Fatal(err)
	}
	target, err := netns.GetFromPath(pod)
	if err != nil {
		b.Fatal(err)
	}
	defer target.Close()
	idx := l.Attrs().Index
	msgs := []struct {
		flags, change uint32
		attrs         []*nl.RtAttr
	}{
		{change: unix.IFF_UP},
		{attrs: []*nl.RtAttr{nl.NewRtAttr(unix.IFLA_IFALIAS, []byte("railyard:bench")), nl.NewRtAttr(unix.IFLA_IFNAME, nl.ZeroTerminated("rybench"))}},
		{flags: unix.IFF_UP, change: unix.IFF_UP, attrs: []*nl.RtAttr{nl.NewRtAttr(unix.IFLA_NET_NS_FD, nl.Uint32Attr(uint32(target))), nl.NewRtAttr(unix.IFLA_IFNAME, nl.ZeroTerminated("net1"))}},
	}
	for _, m := range msgs {
		req := nl.NewNetlinkRequest(unix.RTM_SETLINK, unix.NLM_F_ACK)
		info := nl.NewIfInfomsg(unix.AF_UNSPEC)
		info.Index, info.Flags, info.Change = int32(idx), m.flags, m.change
		req.AddData(info)
		for _, a := range m.attrs {
			req.AddData(a)
		}
		if _, err := req.Execute(unix.NETLINK_ROUTE, 0); err != nil {
			b.Fatal(err)
		}
	}
}

func medianOf(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
