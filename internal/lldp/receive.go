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
	var heard tally
	err := listen(ctx, ifname, &heard, true)
	if err == nil && len(heard.neighbors) > 0 {
		return heard.neighbors[0].Neighbor, nil
	}
	return Neighbor{}, err
}

// listen receives LLDP on ifname into heard until ctx ends, or, with
// first, until a valid data unit arrives. The error says why the port has
// no neighbor when it ends without one (a missing or down port, a socket
// failure, or heard.none's reasons); nil when it heard a neighbor.
func listen(ctx context.Context, ifname string, heard *tally, first bool) error {
	ifi, err := net.InterfaceByName(ifname)
	if err != nil {
		return fmt.Errorf("port %s: no such netdev in this network namespace", ifname)
	}
	if ifi.Flags&net.FlagUp == 0 {
		return fmt.Errorf("port %s is down: LLDP needs the link up", ifname)
	}
	fd, err := open(ifi.Index)
	if err != nil {
		return fmt.Errorf("port %s: %w", ifname, err)
	}
	defer unix.Close(fd)

	start := time.Now()
	buf := make([]byte, maxFrame)
	for {
		if err := ctx.Err(); err != nil {
			if heard.current(time.Now()) > 0 {
				return nil
			}
			carrier := true
			if ifi2, err := net.InterfaceByIndex(ifi.Index); err == nil && ifi2.Flags&net.FlagRunning == 0 {
				carrier = false
			}
			return heard.none(ifname, time.Since(start).Round(time.Second), carrier)
		}
		n, from, err := unix.Recvfrom(fd, buf, unix.MSG_TRUNC)
		switch {
		case errors.Is(err, unix.EAGAIN), errors.Is(err, unix.EINTR):
			continue
		case err != nil:
			return fmt.Errorf("port %s: receiving: %w", ifname, err)
		}
		// Only frames that came in on this port (open binds the socket
		// to it; the check keeps the rule in one visible place).
		if ll, ok := from.(*unix.SockaddrLinklayer); !ok || ll.Ifindex != ifi.Index || ll.Pkttype == unix.PACKET_OUTGOING {
			continue
		}
		if _, ok := heard.frame(buf, n, time.Now()); ok && first {
			return nil
		}
	}
}

// tally is what one port heard: the malformed LLDP frames (how many, the
// last one's fault), the last shutdown, and every distinct neighbor of a
// valid frame not withdrawn since.
type tally struct {
	malformed int
	last      error
	shutdown  error
	neighbors []heardNeighbor
}

// heardNeighbor is a neighbor as its latest frame described it, and when
// that frame arrived.
type heardNeighbor struct {
	Neighbor
	at time.Time
}

// same reports whether two data units come from the same neighbor: the
// same chassis ID, port ID and system name. A port that hears two
// neighbors hears frames that differ in one of them (two switches, two
// ports of one switch, two agents on one port).
func same(a, b Neighbor) bool {
	return a.ChassisIDType == b.ChassisIDType && a.ChassisID == b.ChassisID &&
		a.PortIDType == b.PortIDType && a.PortID == b.PortID && a.SystemName == b.SystemName
}

// frame judges one received frame, which arrived at at: buf holds its
// first bytes and n is its length (MSG_TRUNC: larger than buf when it was
// cut). It returns the neighbor of a valid LLDP data unit and records it
// (a neighbor heard before is updated). Frames to another destination, or
// too short for an Ethernet header, are not LLDP's and not counted; a
// frame to an LLDP address that is too large to hold whole, or does not
// decode, is malformed; a shutdown data unit (TTL 0) is remembered and
// withdraws the neighbor of its chassis and port ID (IEEE 802.1AB: the
// receiver deletes it at once) until it is heard again.
func (t *tally) frame(buf []byte, n int, at time.Time) (Neighbor, bool) {
	if n < 14 || len(buf) < 14 || !lldpDestination(buf[:6]) {
		return Neighbor{}, false
	}
	if n > len(buf) {
		t.malformed++
		t.last = fmt.Errorf("a frame of %d bytes, more than the %d a port receives", n, len(buf))
		return Neighbor{}, false
	}
	nb, err := decode(buf[:n])
	switch {
	case errors.Is(err, ErrShutdown):
		t.shutdown = err
		kept := t.neighbors[:0]
		for _, h := range t.neighbors {
			if h.ChassisIDType != nb.ChassisIDType || h.ChassisID != nb.ChassisID || h.PortIDType != nb.PortIDType || h.PortID != nb.PortID {
				kept = append(kept, h)
			}
		}
		t.neighbors = kept
	case errors.Is(err, ErrNotLLDP):
	case err != nil:
		t.malformed++
		t.last = err
	default:
		for i := range t.neighbors {
			if same(t.neighbors[i].Neighbor, nb) {
				t.neighbors[i] = heardNeighbor{nb, at}
				return nb, true
			}
		}
		if len(t.neighbors) < maxNeighbors {
			t.neighbors = append(t.neighbors, heardNeighbor{nb, at})
		}
		return nb, true
	}
	return Neighbor{}, false
}

// maxNeighbors bounds the distinct neighbors one port keeps in a round:
// one is right, two are a fault; a flood of forged frames with ever new
// IDs must not grow without end.
const maxNeighbors = 16

// current drops, at now, the neighbors whose information expired (their
// latest frame's TTL ran out) while another's has not: a port recabled
// within the round hears its new switch, not both. It returns how many
// neighbors remain. A port whose every neighbor expired keeps them (a
// round reports what it heard; the publisher holds and ages neighbors by
// rounds).
func (t *tally) current(now time.Time) int {
	live := 0
	for _, h := range t.neighbors {
		if !h.expired(now) {
			live++
		}
	}
	if live > 0 && live < len(t.neighbors) {
		kept := t.neighbors[:0]
		for _, h := range t.neighbors {
			if !h.expired(now) {
				kept = append(kept, h)
			}
		}
		t.neighbors = kept
	}
	return len(t.neighbors)
}

func (h heardNeighbor) expired(now time.Time) bool { return now.Sub(h.at) > h.TTL }

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
// has none, every other neighbor it heard in the same wait (a port should
// hear one: two mean a switch or hub between, or a second device sending
// LLDP on the link), and how many malformed LLDP frames it heard
// meanwhile (a switch, or something else on the link, sending frames that
// do not decode: two chassis IDs, a bad TTL, a truncated TLV, a frame too
// large).
type Result struct {
	Port     string    `json:"port"`
	Neighbor *Neighbor `json:"neighbor,omitempty"`
	// Others lists the other neighbors the port heard (a different
	// chassis ID, port ID or system name), in the order first heard after
	// Neighbor's; empty when it heard one.
	Others    []Neighbor `json:"others,omitempty"`
	Malformed int        `json:"malformed,omitempty"`
	Err       error      `json:"-"`
}

// ReceiveAll listens on every port at once until ctx ends (the whole
// wait: a second neighbor may speak after the first) and returns one
// Result per port, in the order of ports: the neighbors each port heard,
// less those a shutdown frame withdrew and, where another's is still
// valid, those whose TTL ran out (a port recabled within the wait).
func ReceiveAll(ctx context.Context, ports []string) []Result {
	out := make([]Result, len(ports))
	var wg sync.WaitGroup
	for i, p := range ports {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var heard tally
			err := listen(ctx, p, &heard, false)
			out[i] = Result{Port: p, Malformed: heard.malformed, Err: err}
			if err == nil && len(heard.neighbors) > 0 {
				nb := heard.neighbors[0].Neighbor
				out[i].Neighbor = &nb
				for _, h := range heard.neighbors[1:] {
					out[i].Others = append(out[i].Others, h.Neighbor)
				}
			}
		}()
	}
	wg.Wait()
	return out
}
