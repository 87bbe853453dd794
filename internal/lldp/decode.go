package lldp

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
)

// EtherType is LLDP's ethertype.
const EtherType = 0x88cc

// Neighbor is what one LLDP data unit says about the other end of a cable.
type Neighbor struct {
	// ChassisID identifies the switch: a MAC address as aa:bb:cc:dd:ee:ff,
	// a network address, or the switch's own string, per ChassisIDType.
	ChassisID     string `json:"chassisID"`
	ChassisIDType string `json:"chassisIDType"`
	// PortID identifies the switch port: an interface name ("swp12",
	// "Ethernet1/12"), a MAC address or a locally assigned string.
	PortID     string `json:"portID"`
	PortIDType string `json:"portIDType"`
	// SystemName is the switch's host name (sysName), "" if not sent.
	SystemName        string `json:"systemName,omitempty"`
	SystemDescription string `json:"systemDescription,omitempty"`
	PortDescription   string `json:"portDescription,omitempty"`
	// ManagementAddress is the first management address, "" if none.
	ManagementAddress string `json:"managementAddress,omitempty"`
	// MaxFrameSize is the IEEE 802.3 maximum frame size TLV (0 if not sent).
	MaxFrameSize int `json:"maxFrameSize,omitempty"`
	// TTL is how long the switch says this information holds.
	TTL time.Duration `json:"ttl"`
	// SourceMAC is the frame's source address (the switch port's MAC).
	SourceMAC string `json:"sourceMAC"`
}

// Switch names the neighbor's switch for people and labels: its system
// name, else its chassis ID.
func (n Neighbor) Switch() string {
	if n.SystemName != "" {
		return n.SystemName
	}
	return n.ChassisID
}

// ErrNotLLDP is returned (wrapped) for a frame that is not an LLDP data
// unit: another ethertype, or too short to hold one.
var ErrNotLLDP = errors.New("not an LLDP frame")

// ErrShutdown is returned (wrapped) for a shutdown LLDP data unit (TTL 0):
// the switch withdraws what it said about the port (IEEE 802.1AB: the
// receiver deletes the neighbor at once), so it names no neighbor.
var ErrShutdown = errors.New("LLDP shutdown (TTL 0)")

// maxText bounds each decoded string: LLDP's TLVs hold at most 511 bytes,
// and what is not UTF-8 text is shown escaped.
const maxText = 255

// Decode decodes one Ethernet frame holding an LLDP data unit. It never
// panics: a malformed frame is an error (a TLV that may appear once
// appearing twice, a TTL that is not two bytes, as well as what gopacket
// refuses), and a shutdown data unit (TTL 0) is ErrShutdown, never a
// neighbor.
func Decode(frame []byte) (Neighbor, error) {
	n, err := decode(frame)
	if err != nil {
		return Neighbor{}, err
	}
	return n, nil
}

// decode is Decode, except that with ErrShutdown it also returns the
// withdrawing data unit's chassis and port IDs (and nothing else): the
// neighbor a receiver deletes.
func decode(frame []byte) (Neighbor, error) {
	pkt := gopacket.NewPacket(frame, layers.LayerTypeEthernet, gopacket.DecodeOptions{Lazy: false, NoCopy: true})
	eth, ok := pkt.Layer(layers.LayerTypeEthernet).(*layers.Ethernet)
	if !ok {
		return Neighbor{}, fmt.Errorf("%w: no Ethernet header in %d bytes", ErrNotLLDP, len(frame))
	}
	if eth.EthernetType != layers.EthernetTypeLinkLayerDiscovery {
		return Neighbor{}, fmt.Errorf("%w: ethertype %#04x", ErrNotLLDP, uint16(eth.EthernetType))
	}
	if fail := pkt.ErrorLayer(); fail != nil {
		return Neighbor{}, fmt.Errorf("malformed LLDP data unit: %w", fail.Error())
	}
	du, ok := pkt.Layer(layers.LayerTypeLinkLayerDiscovery).(*layers.LinkLayerDiscovery)
	if !ok {
		return Neighbor{}, errors.New("malformed LLDP data unit: no chassis, port and TTL")
	}
	if err := checkTLVs(du.Contents); err != nil {
		return Neighbor{}, fmt.Errorf("malformed LLDP data unit: %w", err)
	}
	n := Neighbor{
		ChassisIDType: du.ChassisID.Subtype.String(),
		ChassisID:     chassisID(du.ChassisID),
		PortIDType:    du.PortID.Subtype.String(),
		PortID:        portID(du.PortID),
		TTL:           time.Duration(du.TTL) * time.Second,
		SourceMAC:     eth.SrcMAC.String(),
	}
	if n.ChassisID == "" || n.PortID == "" {
		return Neighbor{}, errors.New("malformed LLDP data unit: empty chassis or port ID")
	}
	if du.TTL == 0 {
		return n, fmt.Errorf("%w from chassis %s port %s: the switch withdrew the neighbor", ErrShutdown, n.ChassisID, n.PortID)
	}
	if info, ok := pkt.Layer(layers.LayerTypeLinkLayerDiscoveryInfo).(*layers.LinkLayerDiscoveryInfo); ok {
		n.SystemName = text([]byte(info.SysName))
		n.SystemDescription = text([]byte(info.SysDescription))
		n.PortDescription = text([]byte(info.PortDescription))
		n.ManagementAddress = address(info.MgmtAddress.Subtype, info.MgmtAddress.Address)
		if i8023, err := info.Decode8023(); err == nil {
			n.MaxFrameSize = int(i8023.MTU)
		}
	}
	return n, nil
}

// singleTLVs lists the TLV types an LLDP data unit may carry at most
// once (IEEE 802.1AB: the mandatory chassis ID, port ID and TTL, and the
// port description, system name and system description): gopacket keeps the last of several, so a frame naming two
// chassis or two system names would be read as whichever came last.
var singleTLVs = map[layers.LLDPTLVType]string{
	layers.LLDPTLVChassisID:       "chassis ID",
	layers.LLDPTLVPortID:          "port ID",
	layers.LLDPTLVTTL:             "TTL",
	layers.LLDPTLVPortDescription: "port description",
	layers.LLDPTLVSysName:         "system name",
	layers.LLDPTLVSysDescription:  "system description",
}

// checkTLVs walks the data unit's TLVs up to the End TLV and refuses what
// gopacket lets through: a TLV of singleTLVs repeated, and a TTL TLV
// that is not exactly two bytes (gopacket reads the first two of any
// length). Truncation and the mandatory TLVs' presence are gopacket's.
func checkTLVs(b []byte) error {
	seen := map[layers.LLDPTLVType]bool{}
	for len(b) >= 2 {
		typ := layers.LLDPTLVType(b[0] >> 1)
		n := int(b[0]&1)<<8 | int(b[1])
		if typ == layers.LLDPTLVEnd || len(b) < 2+n {
			return nil
		}
		if name, ok := singleTLVs[typ]; ok {
			if seen[typ] {
				return fmt.Errorf("two %s TLVs", name)
			}
			seen[typ] = true
		}
		if typ == layers.LLDPTLVTTL && n != 2 {
			return fmt.Errorf("a TTL TLV of %d bytes, want 2", n)
		}
		b = b[2+n:]
	}
	return nil
}

func chassisID(c layers.LLDPChassisID) string {
	switch c.Subtype {
	case layers.LLDPChassisIDSubTypeMACAddr:
		return mac(c.ID)
	case layers.LLDPChassisIDSubTypeNetworkAddr:
		if len(c.ID) > 1 {
			return address(layers.IANAAddressFamily(c.ID[0]), c.ID[1:])
		}
	}
	return text(c.ID)
}

func portID(p layers.LLDPPortID) string {
	switch p.Subtype {
	case layers.LLDPPortIDSubtypeMACAddr:
		return mac(p.ID)
	case layers.LLDPPortIDSubtypeNetworkAddr:
		if len(p.ID) > 1 {
			return address(layers.IANAAddressFamily(p.ID[0]), p.ID[1:])
		}
	}
	return text(p.ID)
}

func mac(b []byte) string {
	if len(b) != 6 {
		return text(b)
	}
	return net.HardwareAddr(b).String()
}

func address(family layers.IANAAddressFamily, b []byte) string {
	switch {
	case family == layers.IANAAddressFamilyIPV4 && len(b) == 4,
		family == layers.IANAAddressFamilyIPV6 && len(b) == 16:
		return net.IP(b).String()
	case len(b) == 0:
		return ""
	}
	return text(b)
}

// text returns b as a string when it is printable UTF-8, else quoted with
// escapes, bounded to maxText bytes.
func text(b []byte) string {
	if len(b) > maxText {
		b = b[:maxText]
	}
	s := string(b)
	if utf8.ValidString(s) && strings.IndexFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f }) < 0 {
		return strings.TrimRight(s, " ")
	}
	q := fmt.Sprintf("%q", s)
	return q[1 : len(q)-1]
}
