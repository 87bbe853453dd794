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
// listens: the socket's multicast memberships go when it closes.
func Receive(ctx context.Context, ifname string) (Neighbor, error) {
	ifi, err := net.InterfaceByName(ifname)
	if err != nil {
		return Neighbor{}, fmt.Errorf("port %s: no such netdev in this network namespace", ifname)
	}
	if ifi.Flags&net.FlagUp == 0 {
		return Neighbor{}, fmt.Errorf("port %s is down: LLDP needs the link up", ifname)
	}
	fd, err := open(ifi.Index)
	if err != nil {
		return Neighbor{}, fmt.Errorf("port %s: %w", ifname, err)
	}
	defer unix.Close(fd)

	start := time.Now()
	buf := make([]byte, maxFrame)
	var malformed error
	for {
		if err := ctx.Err(); err != nil {
			if malformed != nil {
				return Neighbor{}, fmt.Errorf("port %s: %w valid within %s (last frame: %w)", ifname, ErrNoFrame, time.Since(start).Round(time.Second), malformed)
			}
			if ifi2, err := net.InterfaceByIndex(ifi.Index); err == nil && ifi2.Flags&net.FlagRunning == 0 {
				return Neighbor{}, fmt.Errorf("port %s: %w within %s: the link has no carrier", ifname, ErrNoFrame, time.Since(start).Round(time.Second))
			}
			return Neighbor{}, fmt.Errorf("port %s: %w within %s (the switch does not send LLDP, or the NIC's firmware consumes it)", ifname, ErrNoFrame, time.Since(start).Round(time.Second))
		}
		n, from, err := unix.Recvfrom(fd, buf, unix.MSG_TRUNC)
		switch {
		case errors.Is(err, unix.EAGAIN), errors.Is(err, unix.EINTR):
			continue
		case err != nil:
			return Neighbor{}, fmt.Errorf("port %s: receiving: %w", ifname, err)
		}
		// Only frames that came in on this port (open binds the socket
		// to it; the check keeps the rule in one visible place).
		if ll, ok := from.(*unix.SockaddrLinklayer); !ok || ll.Ifindex != ifi.Index || ll.Pkttype == unix.PACKET_OUTGOING {
			continue
		}
		if n > len(buf) || n < 14 || !lldpDestination(buf[:6]) {
			continue
		}
		nb, err := Decode(buf[:n])
		if err != nil {
			malformed = err
			continue
		}
		return nb, nil
	}
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
// has none.
type Result struct {
	Port     string    `json:"port"`
	Neighbor *Neighbor `json:"neighbor,omitempty"`
	Err      error     `json:"-"`
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
			nb, err := Receive(ctx, p)
			out[i] = Result{Port: p, Err: err}
			if err == nil {
				out[i].Neighbor = &nb
			}
		}()
	}
	wg.Wait()
	return out
}
