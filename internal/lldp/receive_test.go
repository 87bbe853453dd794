package lldp

import (
	"context"
	"net"
	"os/exec"
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
