//go:build linux

package cni

// Multi-rail routing against the real kernel: two veths stand in for two
// rails' VFs; each one's peer is in a namespace of its own (the rail's
// switch and a remote host on it), and both peers have the same address,
// 192.168.50.100, so that only the rail a packet leaves through decides
// which peer gets it.

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/railyard-io/railyard/internal/cni/sysfstest"
	"github.com/railyard-io/railyard/internal/netops"
	"github.com/railyard-io/railyard/internal/netops/netnstest"
)

const railPeer = "192.168.50.100"

type railsWorld struct {
	t            *testing.T
	pod          string
	peers        [2]string // each rail's peer namespace
	devs         [2]string // each rail's veth on the host
	pcis         [2]string
	sysfs, state string
	ipam         *fakeIPAM
	multiRail    bool
}

func newRailsWorld(t *testing.T, multiRail bool) *railsWorld {
	t.Helper()
	netnstest.Require(t)
	dir := t.TempDir()
	w := &railsWorld{t: t, pod: netnstest.NewNetns(t, "mrpod"), pcis: [2]string{"0000:7f:00.1", "0000:7f:00.2"},
		sysfs: filepath.Join(dir, "sys"), state: filepath.Join(dir, "state"), ipam: newFakeIPAM(), multiRail: multiRail}
	tree, err := sysfstest.New(w.sysfs)
	must(t, err)
	for i, tag := range []string{"a", "b"} {
		w.peers[i] = netnstest.NewNetns(t, "mr"+tag)
		w.devs[i] = netnstest.Name("rail" + tag)
		peer := netnstest.NewVethPeer(t, w.devs[i], w.peers[i])
		netnstest.IPIn(t, w.peers[i], "addr", "add", railPeer+"/24", "dev", peer)
		netnstest.IPIn(t, w.peers[i], "link", "set", peer, "up")
		netnstest.IP(t, "link", "set", w.devs[i], "up")
		must(t, tree.AddNetdev(w.pcis[i], w.devs[i]))
	}
	return w
}

func (w *railsWorld) args(i int) Args {
	conf := fmt.Sprintf(`{"cniVersion":"1.1.0","name":"rails","type":"railyard-cni","deviceID":%q,
		"ipam":{"type":"fake-ipam"},"stateDir":%q,"sysfsRoot":%q,"multiRail":%v}`, w.pcis[i], w.state, w.sysfs, w.multiRail)
	return args("c1", w.pod, fmt.Sprintf("net%d", i+1), []byte(conf))
}

func (w *railsWorld) plugin() *Plugin {
	return &Plugin{Ops: netops.Linux{}, IPAM: w.ipam, BootID: "b", TestRoot: os.TempDir()}
}

// attach adds both rails: net1 gets 192.168.50.10, net2 192.168.50.11.
func (w *railsWorld) attach() {
	w.t.Helper()
	for i := range 2 {
		if _, err := w.plugin().Add(ctx, w.args(i)); err != nil {
			w.t.Fatal(err)
		}
	}
}

// sendFrom sends a datagram from the pod, bound to address src, to
// railPeer, and reports which rails' peers got it.
func (w *railsWorld) sendFrom(src string) [2]bool {
	w.t.Helper()
	var conns [2]net.PacketConn
	for i := range 2 {
		netnstest.Do(w.t, w.peers[i], func() error {
			var err error
			conns[i], err = net.ListenPacket("udp4", railPeer+":7777")
			return err
		})
		defer conns[i].Close()
	}
	netnstest.Do(w.t, w.pod, func() error {
		c, err := net.DialUDP("udp4", &net.UDPAddr{IP: net.ParseIP(src)}, &net.UDPAddr{IP: net.ParseIP(railPeer), Port: 7777})
		if err != nil {
			return err
		}
		defer c.Close()
		_, err = c.Write([]byte("from " + src))
		return err
	})
	var got [2]bool
	deadline := time.Now().Add(1500 * time.Millisecond)
	for i, c := range conns {
		// A deadline already past fails the read without looking at
		// what is queued: the second peer gets a moment of its own.
		_ = c.SetReadDeadline(later(deadline, time.Now().Add(200*time.Millisecond)))
		buf := make([]byte, 64)
		n, _, err := c.ReadFrom(buf)
		got[i] = err == nil && string(buf[:n]) == "from "+src
	}
	return got
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// fluxMAC makes rail A's peer ask, on rail A, who has rail B's address,
// and returns the MAC it learnt ("" if none): net1's when the pod
// answers for net2's address on net1 (ARP flux).
func (w *railsWorld) fluxMAC() string {
	w.t.Helper()
	netnstest.Do(w.t, w.peers[0], func() error {
		c, err := net.Dial("udp4", "192.168.50.11:7778")
		if err != nil {
			return err
		}
		defer c.Close()
		_, err = c.Write([]byte("who has"))
		return err
	})
	time.Sleep(700 * time.Millisecond)
	out := netnstest.IPIn(w.t, w.peers[0], "neigh", "show", "192.168.50.11")
	if _, mac, ok := strings.Cut(out, "lladdr "); ok {
		return strings.Fields(mac)[0]
	}
	return ""
}

func (w *railsWorld) podMAC(ifname string) string {
	w.t.Helper()
	l, err := netops.Linux{}.Link(ctx, w.pod, ifname)
	must(w.t, err)
	return l.MAC.String()
}

// TestRealNetnsMultiRailTrafficLeavesThroughItsRailVeth: two rails in one
// subnet in a pod. Each answers ARP only for its own address (rail A's
// peer asking on rail A for rail B's address learns nothing), has its own
// table and rule, and a datagram from rail B's address reaches rail B's
// peer, one from rail A's rail A's. CHECK passes; DEL removes the rules,
// and the tables went with the interfaces.
func TestRealNetnsMultiRailTrafficLeavesThroughItsRailVeth(t *testing.T) {
	w := newRailsWorld(t, true)
	w.attach()
	lx := netops.Linux{}
	var tables [2]int
	for i, ifname := range []string{"net1", "net2"} {
		for knob, want := range map[string]string{"arp_ignore": "1", "arp_announce": "2", "rp_filter": "2"} {
			if v, err := lx.Sysctl(ctx, w.pod, netops.IfaceSysctl("ipv4", ifname, knob)); err != nil || v != want {
				t.Errorf("%s %s = %q, %v; want %s", ifname, knob, v, err, want)
			}
		}
		l, err := lx.Link(ctx, w.pod, ifname)
		must(t, err)
		tables[i] = railTable(l.Index)
		routes, err := lx.Routes(ctx, w.pod, tables[i])
		if err != nil || len(routes) != 1 || routes[0].Dst.String() != "192.168.50.0/24" || routes[0].Link != ifname {
			t.Errorf("table %d of %s: %v, %v", tables[i], ifname, routes, err)
		}
	}
	rules, err := lx.Rules(ctx, w.pod)
	must(t, err)
	want := []netops.Rule{
		{Priority: railRulePriority, Src: hostNet(t, "192.168.50.10/32"), Table: tables[0]},
		{Priority: railRulePriority, Src: hostNet(t, "192.168.50.11/32"), Table: tables[1]},
	}
	if diff := cmp.Diff(want, rules); diff != "" {
		t.Errorf("rules (-want +got):\n%s", diff)
	}
	if got := w.sendFrom("192.168.50.11"); got != [2]bool{false, true} {
		t.Errorf("from rail B's address: rail A's peer got it %v, rail B's %v; want rail B's only", got[0], got[1])
	}
	if got := w.sendFrom("192.168.50.10"); got != [2]bool{true, false} {
		t.Errorf("from rail A's address: rail A's peer got it %v, rail B's %v; want rail A's only", got[0], got[1])
	}
	if mac := w.fluxMAC(); mac != "" {
		t.Errorf("rail A's peer learnt %s for rail B's address (net1 is %s): ARP flux", mac, w.podMAC("net1"))
	}
	for i := range 2 {
		must(t, w.plugin().Check(ctx, w.args(i)))
	}
	for i := range 2 {
		must(t, w.plugin().Del(ctx, w.args(i)))
	}
	if rules, err := lx.Rules(ctx, w.pod); err != nil || len(rules) != 0 {
		t.Errorf("rules after DEL: %v, %v", rules, err)
	}
	for _, table := range tables {
		if routes, err := lx.Routes(ctx, w.pod, table); err != nil || len(routes) != 0 {
			t.Errorf("table %d after DEL: %v, %v", table, routes, err)
		}
	}
	def, err := lx.Sysctl(ctx, netops.Host, "net/ipv4/conf/default/arp_ignore")
	must(t, err)
	for _, dev := range w.devs {
		if v, err := lx.Sysctl(ctx, netops.Host, netops.IfaceSysctl("ipv4", dev, "arp_ignore")); err != nil || v != def {
			t.Errorf("%s back on the host: arp_ignore %q, %v; want the host's default %s", dev, v, err, def)
		}
	}
}

// TestRealNetnsWithoutMultiRailTrafficTakesTheFirstRailVeth is the
// control: with multiRail false, a datagram from rail B's address leaves
// through rail A (the main table's first route of the subnet), and the
// pod answers rail A's peer for rail B's address with net1's MAC.
func TestRealNetnsWithoutMultiRailTrafficTakesTheFirstRailVeth(t *testing.T) {
	w := newRailsWorld(t, false)
	w.attach()
	if rules, err := (netops.Linux{}).Rules(ctx, w.pod); err != nil || len(rules) != 0 {
		t.Errorf("rules with multiRail false: %v, %v", rules, err)
	}
	if got := w.sendFrom("192.168.50.11"); got != [2]bool{true, false} {
		t.Errorf("from rail B's address without multiRail: rail A's peer got it %v, rail B's %v; want rail A's (the confusion multiRail fixes)", got[0], got[1])
	}
	// The kernel's default answers ARP on any interface (arp_ignore 0),
	// unless the node set another default for new namespaces.
	all, _ := (netops.Linux{}).Sysctl(ctx, w.pod, "net/ipv4/conf/all/arp_ignore")
	own, _ := (netops.Linux{}).Sysctl(ctx, w.pod, netops.IfaceSysctl("ipv4", "net1", "arp_ignore"))
	if all != "0" || own != "0" {
		t.Logf("arp_ignore is %s (all) and %s (net1) without multiRail here: no ARP flux to show", all, own)
	} else if mac, net1 := w.fluxMAC(), w.podMAC("net1"); mac != net1 {
		t.Errorf("rail A's peer learnt %q for rail B's address, want net1's %s (ARP flux)", mac, net1)
	}
	for i := range 2 {
		must(t, w.plugin().Del(ctx, w.args(i)))
	}
}
