package lldp

import (
	"context"
	"errors"
	"net"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/railyard-io/railyard/internal/netops/netnstest"
)

// vethPair makes a veth pair in this namespace, both ends up, and returns
// the end that stands in for a NIC port and the end a switch sends on.
func vethPair(t *testing.T, tag string) (port, peer string) {
	t.Helper()
	port, peer = netnstest.Name(tag+"h"), netnstest.Name(tag+"p")
	netnstest.IP(t, "link", "add", port, "type", "veth", "peer", "name", peer)
	t.Cleanup(func() { _ = exec.Command("ip", "link", "del", port).Run() })
	netnstest.IP(t, "link", "set", port, "up")
	netnstest.IP(t, "link", "set", peer, "up")
	return port, peer
}

// sendLoop sends f on ifname every `every` (0: as fast as it can) until
// stop closes.
func sendLoop(t *testing.T, ifname string, f []byte, every time.Duration, stop <-chan struct{}) {
	t.Helper()
	ifi, err := net.InterfaceByName(ifname)
	if err != nil {
		t.Fatal(err)
	}
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	to := &unix.SockaddrLinklayer{Protocol: htons(EtherType), Ifindex: ifi.Index, Halen: 6}
	copy(to.Addr[:], f[:6])
	go func() {
		defer unix.Close(fd)
		for {
			select {
			case <-stop:
				return
			default:
			}
			_ = unix.Sendto(fd, f, 0, to)
			if every > 0 {
				time.Sleep(every)
			}
		}
	}()
}

// TestReceiveHearsOnlyItsOwnPort: a packet socket opened with LLDP's
// ethertype hears every interface of the namespace until it is bound to
// one, so a port could report the neighbor of another port whose switch
// spoke in that instant (seen in the multi-node e2e: a rail-0 NIC
// reported rail 6's leaf). One port is flooded with frames of another
// switch while the other, whose switch speaks every millisecond, is
// opened again and again: every answer must be its own switch.
func TestReceiveHearsOnlyItsOwnPort(t *testing.T) {
	netnstest.Require(t)
	quiet, quietPeer := vethPair(t, "q")
	_, busyPeer := vethPair(t, "b")
	stop := make(chan struct{})
	var once sync.Once
	halt := func() { once.Do(func() { close(stop) }) }
	t.Cleanup(halt)
	mine := frame(chassisMAC, tlv(2, str(5, "mine")...), ttl120, tlv(5, []byte("leaf-mine")...))
	other := frame(chassisMAC, tlv(2, str(5, "other")...), ttl120, tlv(5, []byte("leaf-other")...))
	sendLoop(t, busyPeer, other, 0, stop)
	sendLoop(t, quietPeer, mine, time.Millisecond, stop)

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const opens = 100
	for i := range opens {
		nb, err := Receive(ctx, quiet)
		if err != nil {
			t.Fatalf("open %d: %v", i, err)
		}
		if nb.SystemName != "leaf-mine" {
			t.Fatalf("open %d of %s heard %s (port %s), the switch of another port", i, quiet, nb.SystemName, nb.PortID)
		}
	}
	halt()
}

// tally counts what a port hears before a neighbor: frames to an LLDP
// address that do not decode or are too large to hold are malformed, a
// shutdown is remembered until a valid frame replaces it, and frames to
// other addresses are none of its business.
func TestTallyJudgesEachFrame(t *testing.T) {
	t.Parallel()
	buf := make([]byte, 64)
	put := func(f []byte) int { return copy(buf, f) }
	var heard tally
	now := time.Unix(1e9, 0)
	twoChassis := frame(chassisMAC, portIfname, ttl120, tlv(1, str(7, "x")...))
	if _, ok := heard.frame(buf, put(twoChassis), now); ok || heard.malformed != 1 {
		t.Fatalf("two chassis IDs: ok %v, malformed %d; want refused and counted", ok, heard.malformed)
	}
	// A jumbo frame the buffer cannot hold: MSG_TRUNC's length is larger.
	put(frame(chassisMAC, portIfname, ttl120))
	if _, ok := heard.frame(buf, 9300, now); ok || heard.malformed != 2 || !strings.Contains(heard.last.Error(), "9300 bytes") {
		t.Fatalf("oversize frame: ok %v, malformed %d, last %v", ok, heard.malformed, heard.last)
	}
	other := frame(chassisMAC, portIfname, ttl120)
	copy(other, []byte{0x33, 0x33, 0, 0, 0, 1}) // IPv6 all-nodes
	if _, ok := heard.frame(buf, put(other), now); ok || heard.malformed != 2 {
		t.Fatalf("a frame to another address: ok %v, malformed %d", ok, heard.malformed)
	}
	if _, ok := heard.frame(buf, put(frame(chassisMAC, portIfname, tlv(3, 0, 0))), now); ok || heard.shutdown == nil {
		t.Fatalf("shutdown: ok %v, remembered %v", ok, heard.shutdown)
	}
	err := heard.none("eth0", 35*time.Second, true)
	if !errors.Is(err, ErrShutdown) || !strings.Contains(err.Error(), "2 malformed LLDP frames") {
		t.Errorf("after a shutdown: %v; want ErrShutdown and the count", err)
	}
	nb, ok := heard.frame(buf, put(frame(chassisMAC, portIfname, ttl120, tlv(5, []byte("leaf-back")...))), now)
	if !ok || nb.SystemName != "leaf-back" {
		t.Errorf("a valid frame after the shutdown: %+v, %v", nb, ok)
	}

	for _, tc := range []struct {
		name    string
		heard   tally
		carrier bool
		want    []string
		not     string
	}{
		{"malformed only", tally{malformed: 3, last: errors.New("malformed LLDP data unit: two chassis ID TLVs")}, true,
			[]string{"no LLDP frame valid within 35s", "3 malformed LLDP frames", "two chassis ID TLVs"}, "does not send LLDP"},
		{"one malformed", tally{malformed: 1, last: errors.New("x")}, true, []string{"1 malformed LLDP frame "}, "does not send LLDP"},
		{"nothing", tally{}, true, []string{"no LLDP frame within 35s (the switch does not send LLDP"}, "malformed"},
		{"no carrier", tally{}, false, []string{"the link has no carrier"}, "malformed"},
	} {
		err := tc.heard.none("eth0", 35*time.Second, tc.carrier)
		if !errors.Is(err, ErrNoFrame) {
			t.Errorf("%s: %v is not ErrNoFrame", tc.name, err)
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %q does not say %q", tc.name, err, w)
			}
		}
		if strings.Contains(err.Error(), tc.not) {
			t.Errorf("%s: %q says %q", tc.name, err, tc.not)
		}
	}
}

// On a real port (a veth), malformed frames and a frame larger than a
// port receives are counted in the Result and said in the reason, not
// taken for a switch that sends no LLDP; a port hearing only shutdown
// frames has no neighbor and says ErrShutdown.
func TestReceiveAllCountsMalformedFramesAndHonoursShutdown(t *testing.T) {
	netnstest.Require(t)
	bad, badPeer := vethPair(t, "m")
	for _, l := range []string{bad, badPeer} {
		netnstest.IP(t, "link", "set", l, "mtu", "9500")
	}
	gone, gonePeer := vethPair(t, "z")
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	twoNames := frame(chassisMAC, portIfname, ttl120, tlv(5, []byte("leaf-a")...), tlv(5, []byte("leaf-b")...))
	jumbo := append(frame(chassisMAC, portIfname, ttl120, tlv(5, []byte("leaf-big")...)), make([]byte, 9300)...)
	sendLoop(t, badPeer, twoNames, 50*time.Millisecond, stop)
	sendLoop(t, badPeer, jumbo, 50*time.Millisecond, stop)
	sendLoop(t, gonePeer, frame(chassisMAC, portIfname, tlv(3, 0, 0), tlv(5, []byte("leaf-z")...)), 50*time.Millisecond, stop)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	res := ReceiveAll(ctx, []string{bad, gone})
	if res[0].Neighbor != nil || res[0].Malformed < 2 {
		t.Errorf("malformed port: neighbor %+v, %d malformed; want none and both kinds counted", res[0].Neighbor, res[0].Malformed)
	}
	if err := res[0].Err; err == nil || !strings.Contains(err.Error(), "malformed LLDP frames") || strings.Contains(err.Error(), "does not send LLDP") {
		t.Errorf("malformed port: %v; want the malformed frames said", err)
	}
	if res[1].Neighbor != nil || !errors.Is(res[1].Err, ErrShutdown) {
		t.Errorf("shut down port: neighbor %+v, %v; want none and ErrShutdown", res[1].Neighbor, res[1].Err)
	}
}
