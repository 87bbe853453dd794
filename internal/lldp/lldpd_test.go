package lldp

import (
	"context"
	"errors"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/railyard-io/railyard/internal/lldp/lldptest"
	"github.com/railyard-io/railyard/internal/netops/netnstest"
)

// startLeaf runs lldpd as a leaf switch named sysName in a new network
// namespace, on the peer ("swp1") of a new veth whose host end, returned,
// stands in for a NIC port.
func startLeaf(t *testing.T, sysName string) (hostPort, leafPort string) {
	t.Helper()
	lldptest.Require(t)
	ns := netnstest.NewNetns(t, "lf")
	nsName := filepath.Base(ns)
	hostPort = netnstest.Name("h")
	netnstest.IP(t, "link", "add", hostPort, "type", "veth", "peer", "name", "swp1", "netns", nsName)
	t.Cleanup(func() { _ = exec.Command("ip", "link", "del", hostPort).Run() })
	netnstest.IP(t, "link", "set", hostPort, "up")
	netnstest.IP(t, "-n", nsName, "link", "set", "swp1", "up")
	lldptest.StartLeaf(t, nsName, "swp1", sysName)
	return hostPort, "swp1"
}

func TestReceiveRealLLDPFromLldpd(t *testing.T) {
	hostPort, leafPort := startLeaf(t, "leaf-rail3")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// lldpd's first frames can go out before lldpcli renamed the system
	// and the port ID subtype: wait for the configured ones.
	var nb Neighbor
	for {
		var err error
		nb, err = Receive(ctx, hostPort)
		if err != nil {
			t.Fatalf("Receive(%s): %v", hostPort, err)
		}
		if nb.SystemName == "leaf-rail3" && nb.PortID == leafPort {
			break
		}
	}
	if nb.PortIDType != "Interface Name" {
		t.Errorf("PortIDType = %q, want Interface Name", nb.PortIDType)
	}
	if nb.ChassisIDType != "MAC Address" || len(nb.ChassisID) != len("aa:bb:cc:dd:ee:ff") {
		t.Errorf("chassis = %q (%s), want lldpd's MAC chassis ID", nb.ChassisID, nb.ChassisIDType)
	}
	if nb.TTL <= 0 || nb.TTL > 10*time.Minute {
		t.Errorf("TTL = %s, want lldpd's few seconds", nb.TTL)
	}
	if nb.Switch() != "leaf-rail3" {
		t.Errorf("Switch() = %q", nb.Switch())
	}
	if nb.SystemDescription != "test leaf" {
		t.Errorf("SystemDescription = %q, want lldpd's -S", nb.SystemDescription)
	}
}

func TestReceiveAllSaysWhyAPortHasNoNeighbor(t *testing.T) {
	hostPort, _ := startLeaf(t, "leaf-rail0")
	silent := netnstest.Name("s")
	ns := netnstest.NewNetns(t, "sl")
	netnstest.NewVeth(t, silent, ns)
	netnstest.IP(t, "link", "set", silent, "up")
	down := netnstest.Name("d")
	netnstest.NewVeth(t, down, ns)

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	start := time.Now()
	res := ReceiveAll(ctx, []string{hostPort, silent, down, "nosuchport0"})
	if took := time.Since(start); took > 20*time.Second {
		t.Errorf("ReceiveAll took %s past its 3 s wait", took)
	}
	if res[0].Err != nil || res[0].Neighbor == nil {
		t.Errorf("port with lldpd: %v", res[0].Err)
	}
	if !errors.Is(res[1].Err, ErrNoFrame) {
		t.Errorf("silent port: err = %v, want ErrNoFrame", res[1].Err)
	}
	if res[2].Err == nil || !strings.Contains(res[2].Err.Error(), "is down") {
		t.Errorf("down port: err = %v, want it to say the port is down", res[2].Err)
	}
	if res[3].Err == nil || !strings.Contains(res[3].Err.Error(), "nosuchport0") {
		t.Errorf("missing port: err = %v", res[3].Err)
	}
	for i, r := range res {
		if r.Port == "" {
			t.Errorf("result %d names no port", i)
		}
	}
}

// A real lldpd stopped as a service stops (SIGTERM) sends a shutdown data
// unit (TTL 0) on its port as its last frame: a receiver takes it as
// ErrShutdown, no neighbor (it used to be decoded as a neighbor whose
// information holds for 0 s).
func TestReceiveShutdownFromStoppedLldpd(t *testing.T) {
	lldptest.Require(t)
	ns := netnstest.NewNetns(t, "sd")
	nsName := filepath.Base(ns)
	hostPort := netnstest.Name("h")
	netnstest.IP(t, "link", "add", hostPort, "type", "veth", "peer", "name", "swp1", "netns", nsName)
	t.Cleanup(func() { _ = exec.Command("ip", "link", "del", hostPort).Run() })
	netnstest.IP(t, "link", "set", hostPort, "up")
	netnstest.IP(t, "-n", nsName, "link", "set", "swp1", "up")
	stop := lldptest.StartStoppableLeaf(t, nsName, "swp1", "leaf-going")

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		nb, err := Receive(ctx, hostPort)
		if err != nil {
			t.Fatalf("Receive(%s) before the stop: %v", hostPort, err)
		}
		if nb.SystemName == "leaf-going" {
			break
		}
	}
	// A socket open while lldpd stops hears its last frame, a shutdown.
	ifi, err := net.InterfaceByName(hostPort)
	if err != nil {
		t.Fatal(err)
	}
	fd, err := open(ifi.Index)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	stop()
	buf := make([]byte, maxFrame)
	var heard tally
	for deadline := time.Now().Add(10 * time.Second); heard.shutdown == nil; {
		if time.Now().After(deadline) {
			t.Fatalf("no shutdown frame within 10 s of stopping lldpd (%d malformed)", heard.malformed)
		}
		n, _, err := unix.Recvfrom(fd, buf, unix.MSG_TRUNC)
		if err != nil {
			continue // the receive timeout
		}
		heard.frame(buf, n, time.Now()) // frames sent before the stop are neighbors
	}
	if err := heard.none(hostPort, time.Second, true); !errors.Is(err, ErrShutdown) || heard.malformed != 0 {
		t.Errorf("after lldpd stopped: %v, %d malformed; want ErrShutdown", err, heard.malformed)
	}
}

// A paused lldpd (lldptest's Pause: SIGSTOP, as a hung switch agent) is
// silent and sends no shutdown frame: a listen while it is paused hears no
// frame (ErrNoFrame, not ErrShutdown, so a publisher holds the neighbor),
// and one after Resume hears the leaf again.
func TestReceiveAllHearsNothingFromAPausedLldpd(t *testing.T) {
	lldptest.Require(t)
	ns := netnstest.NewNetns(t, "pz")
	nsName := filepath.Base(ns)
	hostPort := netnstest.Name("h")
	netnstest.IP(t, "link", "add", hostPort, "type", "veth", "peer", "name", "swp1", "netns", nsName)
	t.Cleanup(func() { _ = exec.Command("ip", "link", "del", hostPort).Run() })
	netnstest.IP(t, "link", "set", hostPort, "up")
	netnstest.IP(t, "-n", nsName, "link", "set", "swp1", "up")
	leaf := lldptest.StartPausableLeaf(t, nsName, "swp1", "leaf-paused")

	listen := func(d time.Duration) Result {
		ctx, cancel := context.WithTimeout(context.Background(), d)
		defer cancel()
		return ReceiveAll(ctx, []string{hostPort})[0]
	}
	if r := listen(3 * time.Second); r.Neighbor == nil || r.Neighbor.SystemName != "leaf-paused" {
		t.Fatalf("before the pause: %+v, %v", r.Neighbor, r.Err)
	}
	leaf.Pause()
	time.Sleep(200 * time.Millisecond) // a frame already in flight
	if r := listen(3 * time.Second); r.Neighbor != nil || !errors.Is(r.Err, ErrNoFrame) || errors.Is(r.Err, ErrShutdown) {
		t.Errorf("paused: neighbor %+v, %v; want none and ErrNoFrame", r.Neighbor, r.Err)
	}
	leaf.Resume()
	if r := listen(3 * time.Second); r.Neighbor == nil || r.Neighbor.SystemName != "leaf-paused" {
		t.Errorf("resumed: neighbor %+v, %v; want leaf-paused", r.Neighbor, r.Err)
	}
}

// A port cabled to a bridge that forwards LLDP (group_fwd_mask bit 14: a
// hub, or an unmanaged switch between the NIC and its leaf) hears two real
// lldpd leaves: ReceiveAll reports both, with their own chassis IDs, not
// whichever spoke first.
func TestReceiveAllHearsTwoLldpdThroughAHub(t *testing.T) {
	lldptest.Require(t)
	hub := filepath.Base(netnstest.NewNetns(t, "hb"))
	hostPort := netnstest.Name("h")
	netnstest.IP(t, "link", "add", hostPort, "type", "veth", "peer", "name", "up0", "netns", hub)
	t.Cleanup(func() { _ = exec.Command("ip", "link", "del", hostPort).Run() })
	netnstest.IP(t, "link", "set", hostPort, "up")
	netnstest.IP(t, "-n", hub, "link", "add", "br0", "type", "bridge", "group_fwd_mask", "0x4000")
	netnstest.IP(t, "-n", hub, "link", "set", "up0", "master", "br0", "up")
	for _, leaf := range []struct{ tag, port, name string }{{"la", "swp1", "leaf-a"}, {"lb", "swp9", "leaf-b"}} {
		ns := filepath.Base(netnstest.NewNetns(t, leaf.tag))
		netnstest.IP(t, "-n", hub, "link", "add", leaf.tag, "type", "veth", "peer", "name", leaf.port, "netns", ns)
		netnstest.IP(t, "-n", hub, "link", "set", leaf.tag, "master", "br0", "up")
		netnstest.IP(t, "-n", ns, "link", "set", leaf.port, "up")
		lldptest.StartLeaf(t, ns, leaf.port, leaf.name)
	}
	netnstest.IP(t, "-n", hub, "link", "set", "br0", "up")

	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
	defer cancel()
	r := ReceiveAll(ctx, []string{hostPort})[0]
	got := heardNames(r)
	if len(got) != 2 || got[0] != "leaf-a/swp1" || got[1] != "leaf-b/swp9" {
		t.Fatalf("port behind the hub: %v, %v; want leaf-a/swp1 and leaf-b/swp9", got, r.Err)
	}
	if r.Neighbor.ChassisID == r.Others[0].ChassisID {
		t.Errorf("both leaves have chassis %s; want each lldpd's own", r.Neighbor.ChassisID)
	}
}
