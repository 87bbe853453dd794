package lldp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// ErrNoFrame is returned (wrapped) when no LLDP frame arrived on a port
// before the wait ended.
var ErrNoFrame = errors.New("no LLDP frame")

// maxFrame bounds one received frame: a jumbo frame, far above an LLDP
// data unit's 1500 bytes.
const maxFrame = 9216

// pollEvery is how often a waiting receive looks at its context.
const pollEvery = 200 * time.Millisecond

// The LLDP destination addresses (IEEE 802.1AB): nearest bridge, nearest
// non-TPMR bridge, nearest customer bridge.
var destinations = [][]byte{
	{0x01, 0x80, 0xc2, 0x00, 0x00, 0x0e},
	{0x01, 0x80, 0xc2, 0x00, 0x00, 0x03},
	{0x01, 0x80, 0xc2, 0x00, 0x00, 0x00},
}

// Receive waits on the network interface ifname for the first valid LLDP
// data unit and returns its neighbor; it gives up when ctx ends. It only
// listens: the socket's multicast memberships go when it closes. Without a
// neighbor the error says why: no frame at all, only malformed ones (how
// many, and the last one's fault), or a shutdown data unit (TTL 0,
// ErrShutdown) with no valid frame after it.
func Receive(ctx context.Context, ifname string) (Neighbor, error) {
	nb, _, err := receive(ctx, ifname)
	return nb, err
}

// receive is Receive that also counts the malformed LLDP frames heard.
func receive(ctx context.Context, ifname string) (Neighbor, int, error) {
	ifi, err := net.InterfaceByName(ifname)
	if err != nil {
		return Neighbor{}, 0, fmt.Errorf("port %s: no such netdev in this network namespace", ifname)
	}
	if ifi.Flags&net.FlagUp == 0 {
		return Neighbor{}, 0, fmt.Errorf("port %s is down: LLDP needs the link up", ifname)
	}
	fd, err := open(ifi.Index)
	if err != nil {
		return Neighbor{}, 0, fmt.Errorf("port %s: %w", ifname, err)
	}
	defer unix.Close(fd)

	start := time.Now()
	buf := make([]byte, maxFrame)
	var heard tally
	for {
		if err := ctx.Err(); err != nil {
			carrier := true
			if ifi2, err := net.InterfaceByIndex(ifi.Index); err == nil && ifi2.Flags&net.FlagRunning == 0 {
				carrier = false
			}
			return Neighbor{}, heard.malformed, heard.none(ifname, time.Since(start).Round(time.Second), carrier)
		}
		n, from, err := unix.Recvfrom(fd, buf, unix.MSG_TRUNC)
		switch {
		case errors.Is(err, unix.EAGAIN), errors.Is(err, unix.EINTR):
			continue
		case err != nil:
			return Neighbor{}, heard.malformed, fmt.Errorf("port %s: receiving: %w", ifname, err)
		}
		// Only frames that came in on this port (open binds the socket
		// to it; the check keeps the rule in one visible place).
		if ll, ok := from.(*unix.SockaddrLinklayer); !ok || ll.Ifindex != ifi.Index || ll.Pkttype == unix.PACKET_OUTGOING {
			continue
		}
		if nb, ok := heard.frame(buf, n); ok {
			return nb, heard.malformed, nil
		}
	}
}

// tally is what one port heard before it had a neighbor: the malformed
// LLDP frames (how many, the last one's fault) and the last shutdown.
type tally struct {
	malformed int
	last      error
	shutdown  error
}

// frame judges one received frame: buf holds its first bytes and n is its
// length (MSG_TRUNC: larger than buf when it was cut). It returns the
// neighbor of a valid LLDP data unit. Frames to another destination, or
// too short for an Ethernet header, are not LLDP's and not counted; a
// frame to an LLDP address that is too large to hold whole, or does not
// decode, is malformed; a shutdown data unit (TTL 0) is remembered.
func (t *tally) frame(buf []byte, n int) (Neighbor, bool) {
	if n < 14 || len(buf) < 14 || !lldpDestination(buf[:6]) {
		return Neighbor{}, false
	}
	if n > len(buf) {
		t.malformed++
		t.last = fmt.Errorf("a frame of %d bytes, more than the %d a port receives", n, len(buf))
		return Neighbor{}, false
	}
	nb, err := Decode(buf[:n])
	switch {
	case errors.Is(err, ErrShutdown):
		t.shutdown = err
	case errors.Is(err, ErrNotLLDP):
	case err != nil:
		t.malformed++
		t.last = err
	default:
		return nb, true
	}
	return Neighbor{}, false
}

// none says why the port had no neighbor within the wait: a shutdown
// data unit (ErrShutdown: the switch withdrew it), else ErrNoFrame with
// the malformed frames counted, else no carrier or no frame at all.
func (t *tally) none(ifname string, waited time.Duration, carrier bool) error {
	switch {
	case t.shutdown != nil && t.malformed > 0:
		return fmt.Errorf("port %s: %w; %d malformed LLDP %s (last: %w)", ifname, t.shutdown,
			t.malformed, plural(t.malformed, "frame", "frames"), t.last)
	case t.shutdown != nil:
		return fmt.Errorf("port %s: %w", ifname, t.shutdown)
	case t.malformed > 0:
		return fmt.Errorf("port %s: %w valid within %s: %d malformed LLDP %s (last: %w)", ifname, ErrNoFrame, waited,
			t.malformed, plural(t.malformed, "frame", "frames"), t.last)
	case !carrier:
		return fmt.Errorf("port %s: %w within %s: the link has no carrier", ifname, ErrNoFrame, waited)
	}
	return fmt.Errorf("port %s: %w within %s (the switch does not send LLDP, or the NIC's firmware consumes it)", ifname, ErrNoFrame, waited)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// open makes a packet socket receiving LLDP's ethertype on one interface,
// with a receive timeout so that Receive sees its context end. The socket
// is opened with protocol 0, which receives nothing, and gets LLDP's
// ethertype only in bind: opened with the ethertype it would hear every
// interface of the namespace until bound, and a frame of another port's
// switch queued in that instant was read as this port's neighbor
// (packet(7); TestReceiveHearsOnlyItsOwnPort).
func open(ifindex int) (int, error) {
	proto := htons(EtherType)
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("opening a packet socket (needs CAP_NET_RAW): %w", err)
	}
	fail := func(what string, err error) (int, error) {
		unix.Close(fd)
		return -1, fmt.Errorf("%s: %w", what, err)
	}
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: proto, Ifindex: ifindex}); err != nil {
		return fail("binding the packet socket", err)
	}
	for _, d := range destinations {
		mreq := unix.PacketMreq{Ifindex: int32(ifindex), Type: unix.PACKET_MR_MULTICAST, Alen: 6}
		copy(mreq.Address[:], d)
		if err := unix.SetsockoptPacketMreq(fd, unix.SOL_PACKET, unix.PACKET_ADD_MEMBERSHIP, &mreq); err != nil {
			return fail("joining LLDP's multicast group", err)
		}
	}
	tv := unix.NsecToTimeval(pollEvery.Nanoseconds())
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		return fail("setting the receive timeout", err)
	}
	return fd, nil
}

func lldpDestination(dst []byte) bool {
	for _, d := range destinations {
		if bytes.Equal(dst, d) {
			return true
		}
	}
	return false
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

// Result is one port's answer from ReceiveAll: its neighbor, or why it
// has none, and how many malformed LLDP frames it heard meanwhile (a
// switch, or something else on the link, sending frames that do not
// decode: two chassis IDs, a bad TTL, a truncated TLV, a frame too large).
type Result struct {
	Port      string    `json:"port"`
	Neighbor  *Neighbor `json:"neighbor,omitempty"`
	Malformed int       `json:"malformed,omitempty"`
	Err       error     `json:"-"`
}

// ReceiveAll listens on every port at once until each has a neighbor or
// ctx ends, and returns one Result per port, in the order of ports.
func ReceiveAll(ctx context.Context, ports []string) []Result {
	out := make([]Result, len(ports))
	var wg sync.WaitGroup
	for i, p := range ports {
		wg.Add(1)
		go func() {
			defer wg.Done()
			nb, malformed, err := receive(ctx, p)
			out[i] = Result{Port: p, Malformed: malformed, Err: err}
			if err == nil {
				out[i].Neighbor = &nb
			}
		}()
	}
	wg.Wait()
	return out
}
