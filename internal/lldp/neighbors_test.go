package lldp

import (
	"context"
	"net"
	"sort"
	"testing"
	"time"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"

	"github.com/railyard-io/railyard/internal/netops/netnstest"
)

// gopacketFrame is an LLDP data unit as gopacket encodes one
// (layers.Ethernet and layers.LinkLayerDiscovery through SerializeLayers),
// to the nearest-bridge address: a MAC chassis ID, an interface-name port
// ID, the TTL in seconds and a system name.
func gopacketFrame(t *testing.T, chassis byte, port, sysName string, ttl uint16) []byte {
	t.Helper()
	mac := net.HardwareAddr{0x0c, 0x42, 0xa1, 0x00, 0x00, chassis}
	eth := &layers.Ethernet{SrcMAC: mac, DstMAC: net.HardwareAddr{0x01, 0x80, 0xc2, 0x00, 0x00, 0x0e}, EthernetType: layers.EthernetTypeLinkLayerDiscovery}
	du := &layers.LinkLayerDiscovery{
		ChassisID: layers.LLDPChassisID{Subtype: layers.LLDPChassisIDSubTypeMACAddr, ID: mac},
		PortID:    layers.LLDPPortID{Subtype: layers.LLDPPortIDSubtypeIfaceName, ID: []byte(port)},
		TTL:       ttl,
		Values:    []layers.LinkLayerDiscoveryValue{{Type: layers.LLDPTLVSysName, Length: uint16(len(sysName)), Value: []byte(sysName)}},
	}
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{}, eth, du); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// heardNames lists a result's neighbors as "system name/port ID", sorted.
func heardNames(r Result) []string {
	var out []string
	if r.Neighbor != nil {
		out = append(out, r.Neighbor.SystemName+"/"+r.Neighbor.PortID)
	}
	for _, o := range r.Others {
		out = append(out, o.SystemName+"/"+o.PortID)
	}
	sort.Strings(out)
	return out
}

// tally keeps every distinct neighbor of the round (chassis ID, port ID
// and system name), the latest frame of each; a shutdown withdraws the
// one of its chassis and port; a neighbor whose TTL ran out goes while
// another's holds, and stays when it is the only one; a flood of new IDs
// is bounded.
func TestTallyKeepsEveryNeighborOfTheRound(t *testing.T) {
	t.Parallel()
	t0 := time.Unix(1e9, 0)
	buf := make([]byte, maxFrame)
	var heard tally
	hear := func(f []byte, at time.Time) {
		t.Helper()
		if _, ok := heard.frame(buf, copy(buf, f), at); !ok {
			t.Fatalf("frame not taken as a neighbor")
		}
	}
	names := func() []string {
		var out []string
		for _, h := range heard.neighbors {
			out = append(out, h.SystemName+"/"+h.PortID)
		}
		return out
	}
	hear(gopacketFrame(t, 1, "swp1", "leaf-a", 120), t0)
	hear(gopacketFrame(t, 1, "swp1", "leaf-a", 120), t0.Add(time.Second))
	hear(gopacketFrame(t, 2, "swp1", "leaf-b", 120), t0.Add(2*time.Second))
	hear(gopacketFrame(t, 1, "swp2", "leaf-a", 120), t0.Add(3*time.Second))
	if got := names(); len(got) != 3 || got[0] != "leaf-a/swp1" || got[1] != "leaf-b/swp1" || got[2] != "leaf-a/swp2" {
		t.Fatalf("neighbors %v; want leaf-a/swp1, leaf-b/swp1, leaf-a/swp2 in the order first heard, each once", got)
	}
	if !heard.neighbors[0].at.Equal(t0.Add(time.Second)) {
		t.Errorf("leaf-a/swp1 last heard at %v; want its latest frame's time", heard.neighbors[0].at)
	}
	// leaf-a withdraws swp1 (TTL 0): only that neighbor goes.
	if _, ok := heard.frame(buf, copy(buf, gopacketFrame(t, 1, "swp1", "", 0)), t0.Add(4*time.Second)); ok || heard.shutdown == nil {
		t.Fatalf("shutdown: taken %v, remembered %v", ok, heard.shutdown)
	}
	if got := names(); len(got) != 2 || got[0] != "leaf-b/swp1" || got[1] != "leaf-a/swp2" {
		t.Errorf("after leaf-a's shutdown of swp1: %v; want leaf-b/swp1, leaf-a/swp2", got)
	}
	if n := heard.current(t0.Add(5 * time.Second)); n != 2 {
		t.Errorf("current: %d neighbors, want 2 (none expired)", n)
	}

	// Recabled within the round: the old switch's TTL (1 s) ran out while
	// the new one's holds.
	var recabled tally
	recabled.frame(buf, copy(buf, gopacketFrame(t, 1, "swp1", "leaf-old", 1)), t0)
	recabled.frame(buf, copy(buf, gopacketFrame(t, 2, "swp1", "leaf-new", 120)), t0.Add(2*time.Second))
	if n := recabled.current(t0.Add(3 * time.Second)); n != 1 || recabled.neighbors[0].SystemName != "leaf-new" {
		t.Errorf("recabled: %d neighbors %+v; want leaf-new only", n, recabled.neighbors)
	}
	// The only neighbor, expired, is still what the round heard.
	var quiet tally
	quiet.frame(buf, copy(buf, gopacketFrame(t, 1, "swp1", "leaf-quiet", 1)), t0)
	if n := quiet.current(t0.Add(time.Minute)); n != 1 {
		t.Errorf("the only neighbor, expired: %d neighbors; want it kept", n)
	}

	var flood tally
	for i := range 40 {
		flood.frame(buf, copy(buf, gopacketFrame(t, byte(i), "swp1", "forged", 120)), t0)
	}
	if len(flood.neighbors) != maxNeighbors {
		t.Errorf("40 forged chassis IDs: %d neighbors kept; want the bound, %d", len(flood.neighbors), maxNeighbors)
	}
}

// On a real port (a veth), frames of two switches, gopacket-encoded, are
// both reported (Neighbor and Others), whichever spoke first; a port
// hearing one switch again and again reports one.
func TestReceiveAllReportsEveryNeighborAPortHears(t *testing.T) {
	netnstest.Require(t)
	two, twoPeer := vethPair(t, "2")
	one, onePeer := vethPair(t, "1")
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	sendLoop(t, twoPeer, gopacketFrame(t, 1, "swp3", "leaf-3", 120), 100*time.Millisecond, stop)
	sendLoop(t, twoPeer, gopacketFrame(t, 2, "Ethernet12", "leaf-4", 120), 100*time.Millisecond, stop)
	sendLoop(t, onePeer, gopacketFrame(t, 3, "swp5", "leaf-5", 120), 20*time.Millisecond, stop)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	res := ReceiveAll(ctx, []string{two, one})
	if got := heardNames(res[0]); len(got) != 2 || got[0] != "leaf-3/swp3" || got[1] != "leaf-4/Ethernet12" || res[0].Err != nil {
		t.Errorf("port hearing two switches: %v, %v; want leaf-3/swp3 and leaf-4/Ethernet12", got, res[0].Err)
	}
	if got := heardNames(res[1]); len(got) != 1 || got[0] != "leaf-5/swp5" || res[1].Err != nil {
		t.Errorf("port hearing one switch: %v, %v; want leaf-5/swp5 alone", got, res[1].Err)
	}
}
