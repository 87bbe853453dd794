package lldp

import (
	"encoding/binary"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// tlv encodes one LLDP TLV: 7 bits of type, 9 bits of length, the value.
func tlv(typ byte, value ...byte) []byte {
	h := uint16(typ)<<9 | uint16(len(value))
	return append(binary.BigEndian.AppendUint16(nil, h), value...)
}

func str(sub byte, s string) []byte { return append([]byte{sub}, s...) }

// frame is an Ethernet frame to the nearest-bridge address from a switch
// port's MAC, carrying the given TLVs and an End TLV.
func frame(tlvs ...[]byte) []byte {
	f := []byte{0x01, 0x80, 0xc2, 0x00, 0x00, 0x0e, 0x0c, 0x42, 0xa1, 0x00, 0x00, 0x07, 0x88, 0xcc}
	for _, t := range tlvs {
		f = append(f, t...)
	}
	return append(f, 0, 0)
}

var (
	chassisMAC = tlv(1, 4, 0x0c, 0x42, 0xa1, 0x00, 0x00, 0x01) // subtype 4: MAC
	portIfname = tlv(2, str(5, "swp12")...)                    // subtype 5: interface name
	ttl120     = tlv(3, 0, 120)
)

func TestDecode(t *testing.T) {
	t.Parallel()
	mgmt := tlv(8, 5, 1, 10, 0, 0, 1, 2, 0, 0, 0, 7, 0)   // IPv4 10.0.0.1, ifIndex 7, no OID
	maxFrame := tlv(127, 0x00, 0x12, 0x0f, 4, 0x23, 0x28) // 802.3 max frame size 9000
	for _, tc := range []struct {
		name  string
		frame []byte
		want  Neighbor
	}{
		{
			name:  "a switch's usual TLVs",
			frame: frame(chassisMAC, portIfname, ttl120, tlv(4, []byte("rail 3 to gpu-node-7")...), tlv(5, []byte("leaf-r3-su1")...), tlv(6, []byte("Cumulus Linux 5.9")...), mgmt, maxFrame),
			want: Neighbor{
				ChassisID: "0c:42:a1:00:00:01", ChassisIDType: "MAC Address",
				PortID: "swp12", PortIDType: "Interface Name",
				SystemName: "leaf-r3-su1", SystemDescription: "Cumulus Linux 5.9", PortDescription: "rail 3 to gpu-node-7",
				ManagementAddress: "10.0.0.1", MaxFrameSize: 9000, TTL: 120 * time.Second, SourceMAC: "0c:42:a1:00:00:07",
			},
		},
		{
			name:  "only the mandatory TLVs",
			frame: frame(chassisMAC, portIfname, ttl120),
			want: Neighbor{ChassisID: "0c:42:a1:00:00:01", ChassisIDType: "MAC Address", PortID: "swp12", PortIDType: "Interface Name",
				TTL: 120 * time.Second, SourceMAC: "0c:42:a1:00:00:07"},
		},
		{
			name:  "local chassis ID and MAC port ID; control bytes escaped",
			frame: frame(tlv(1, str(7, "SN\x01123")...), tlv(2, 3, 0x0c, 0x42, 0xa1, 0x00, 0x00, 0x02), ttl120, tlv(5, []byte("a\nb")...)),
			want: Neighbor{ChassisID: `SN\x01123`, ChassisIDType: "Local", PortID: "0c:42:a1:00:00:02", PortIDType: "MAC Address",
				SystemName: `a\nb`, TTL: 120 * time.Second, SourceMAC: "0c:42:a1:00:00:07"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Decode(tc.frame)
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Decode (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDecodeRefusesMalformedFrames(t *testing.T) {
	t.Parallel()
	ipv4 := append(frame(chassisMAC, portIfname, ttl120)[:12:12], 0x08, 0x00, 0x45)
	for _, tc := range []struct {
		name    string
		frame   []byte
		notLLDP bool
	}{
		{name: "empty", frame: nil, notLLDP: true},
		{name: "IPv4 ethertype", frame: ipv4, notLLDP: true},
		{name: "no TTL", frame: frame(chassisMAC, portIfname)},
		{name: "no chassis ID", frame: frame(portIfname, ttl120, tlv(5, []byte("x")...))},
		{name: "TLV longer than the frame", frame: append(frame(chassisMAC, portIfname)[:len(frame(chassisMAC, portIfname))-2], 0x06, 0xff, 0)},
		{name: "chassis ID of one byte", frame: frame(tlv(1, 4), portIfname, ttl120)},
		{name: "management address with length 0", frame: frame(chassisMAC, portIfname, ttl120, tlv(8, 0, 1, 10, 0, 0, 1, 2, 0, 0))},
		{name: "no End TLV", frame: frame(chassisMAC, portIfname, ttl120)[:len(frame(chassisMAC, portIfname, ttl120))-2]},
		// gopacket keeps the last of two chassis IDs or system names, and
		// reads a 3-byte TTL's first two bytes.
		{name: "two chassis IDs", frame: frame(chassisMAC, portIfname, ttl120, tlv(1, str(7, "other")...))},
		{name: "two port IDs", frame: frame(chassisMAC, portIfname, ttl120, tlv(2, str(5, "swp13")...))},
		{name: "two TTLs", frame: frame(chassisMAC, portIfname, ttl120, tlv(3, 0, 60))},
		{name: "two system names", frame: frame(chassisMAC, portIfname, ttl120, tlv(5, []byte("leaf-a")...), tlv(5, []byte("leaf-b")...))},
		{name: "two system descriptions", frame: frame(chassisMAC, portIfname, ttl120, tlv(6, 'a'), tlv(6, 'b'))},
		{name: "two port descriptions", frame: frame(chassisMAC, portIfname, ttl120, tlv(4, 'a'), tlv(4, 'b'))},
		{name: "TTL of 3 bytes", frame: frame(chassisMAC, portIfname, tlv(3, 0, 120, 0))},
		{name: "TTL of 1 byte", frame: frame(chassisMAC, portIfname, tlv(3, 120))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Decode(tc.frame)
			if err == nil {
				t.Fatalf("Decode = %+v, want an error", got)
			}
			if errors.Is(err, ErrNotLLDP) != tc.notLLDP {
				t.Errorf("errors.Is(%v, ErrNotLLDP) = %v, want %v", err, !tc.notLLDP, tc.notLLDP)
			}
		})
	}
}

// TestDecodeShutdownIsNoNeighbor: a shutdown data unit (TTL 0, what
// lldpd sends when it stops on a port) withdraws the neighbor: Decode
// says ErrShutdown and returns none.
func TestDecodeShutdownIsNoNeighbor(t *testing.T) {
	t.Parallel()
	got, err := Decode(frame(chassisMAC, portIfname, tlv(3, 0, 0), tlv(5, []byte("leaf-r3-su1")...)))
	if !errors.Is(err, ErrShutdown) || errors.Is(err, ErrNotLLDP) {
		t.Fatalf("Decode = %+v, %v; want ErrShutdown", got, err)
	}
	if diff := cmp.Diff(Neighbor{}, got); diff != "" {
		t.Errorf("a shutdown returned a neighbor (-want +got):\n%s", diff)
	}
	if !strings.Contains(err.Error(), "0c:42:a1:00:00:01") {
		t.Errorf("error %q does not name the chassis", err)
	}
	// Repeated optional TLVs that may repeat (management addresses,
	// organizationally specific ones) are fine.
	mgmt := tlv(8, 5, 1, 10, 0, 0, 1, 2, 0, 0, 0, 7, 0)
	if _, err := Decode(frame(chassisMAC, portIfname, ttl120, mgmt, mgmt, tlv(127, 0x00, 0x12, 0x0f, 4, 0x23, 0x28), tlv(127, 0x00, 0x80, 0xc2, 1, 0, 1))); err != nil {
		t.Errorf("two management addresses and two org-specific TLVs: %v", err)
	}
}

func FuzzDecode(f *testing.F) {
	f.Add(frame(chassisMAC, portIfname, ttl120, tlv(5, []byte("leaf")...)))
	f.Add(frame(tlv(1, str(7, "x")...), tlv(2, str(7, "y")...), ttl120, tlv(8, 5, 1, 10, 0, 0, 1, 2, 0, 0, 0, 7, 0)))
	f.Add(frame(chassisMAC, portIfname, ttl120, tlv(127, 0x00, 0x12, 0x0f, 4, 0x23)))
	f.Fuzz(func(t *testing.T, b []byte) {
		nb, err := Decode(b)
		if err != nil {
			return
		}
		if nb.ChassisID == "" || nb.PortID == "" || nb.TTL <= 0 {
			t.Fatalf("decoded a neighbor without chassis, port or TTL: %+v", nb)
		}
		for _, s := range []string{nb.ChassisID, nb.PortID, nb.SystemName, nb.SystemDescription, nb.PortDescription} {
			if len(s) > 4*maxText || strings.ContainsAny(s, "\x00\n") {
				t.Fatalf("unbounded or raw text %q", s)
			}
		}
	})
}
