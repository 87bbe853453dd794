package netops

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"syscall"
)

// DCB is a netdev's IEEE 802.1Qaz settings as the kernel's DCB netlink
// (dcbnl, RTM_GETDCB DCB_CMD_IEEE_GET) reports them, which is what
// mlnx_qos and dcb(8) read: PFC per priority and the DSCP entries of the
// APP table, whose presence is "trust dscp" on mlx5.
type DCB struct {
	// PFCCap is how many priorities PFC can be enabled on at once.
	PFCCap int
	// PFC has bit p set when PFC is enabled on priority p (pfc_en).
	PFC uint8
	// DSCP maps DSCP values to priorities (APP entries with selector 5).
	DSCP map[uint8]uint8
}

// PFCOn reports whether PFC is enabled on priority p (0 to 7).
func (d DCB) PFCOn(p int) bool { return p >= 0 && p < 8 && d.PFC&(1<<p) != 0 }

// PFCPriorities lists the priorities with PFC enabled.
func (d DCB) PFCPriorities() []int {
	var out []int
	for p := range 8 {
		if d.PFCOn(p) {
			out = append(out, p)
		}
	}
	return out
}

// Trust is "dscp" when the APP table maps DSCP values (mlx5 then
// classifies by DSCP), else "pcp" (the VLAN priority).
func (d DCB) Trust() string {
	if len(d.DSCP) > 0 {
		return "dscp"
	}
	return "pcp"
}

// String spells the settings as mlnx_qos does ("trust dscp, PFC on 3").
func (d DCB) String() string {
	p := make([]string, 0, 8)
	for _, v := range d.PFCPriorities() {
		p = append(p, strconv.Itoa(v))
	}
	pfc := "PFC off"
	if len(p) > 0 {
		pfc = "PFC on " + strings.Join(p, ",")
	}
	return fmt.Sprintf("trust %s, %s", d.Trust(), pfc)
}

// DCBOps reads (and node setup changes) a host netdev's DCB settings:
// Linux on a node, netopstest.Fake in tests.
type DCBOps interface {
	DCB(ctx context.Context, netdev string) (DCB, error)
	// SetDCB sets the PFC priorities (bit p: priority p) and the trust
	// mode ("dscp" or "pcp").
	SetDCB(ctx context.Context, netdev string, pfc uint8, trust string) error
}

// ErrDCBNotSupported is returned (wrapped) for a netdev whose driver has
// no DCB operations (a veth, a NIC without DCB).
var ErrDCBNotSupported = errors.New("the device does not support DCB")

// DCB netlink numbers (include/uapi/linux/dcbnl.h).
const (
	dcbCmdIEEESet     = 20
	dcbCmdIEEEGet     = 21
	dcbCmdIEEEDel     = 25
	dcbAttrIfname     = 1
	dcbAttrIEEE       = 13
	dcbAttrIEEEPFC    = 2
	dcbAttrIEEEApps   = 3
	dcbAttrIEEEApp    = 1
	appSelDSCP        = 5
	sizeofDCBMsg      = 4
	sizeofIEEEPFC     = 136 // u8 cap, en, mbc, pad, u16 delay, pad[2], u64 requests[8], indications[8]
	sizeofDCBApp      = 4   // u8 selector, u8 priority, u16 protocol
	nlaTypeMask       = 0x3fff
	maxDCBReplyLength = 1 << 16
)

// parseDCBReply decodes a DCB_CMD_IEEE_GET reply (a dcbmsg and its
// attributes). It never panics on a malformed message.
func parseDCBReply(msg []byte) (DCB, error) {
	if len(msg) < sizeofDCBMsg || len(msg) > maxDCBReplyLength {
		return DCB{}, fmt.Errorf("DCB reply of %d bytes", len(msg))
	}
	if msg[1] != dcbCmdIEEEGet {
		return DCB{}, fmt.Errorf("DCB reply to command %d, want %d", msg[1], dcbCmdIEEEGet)
	}
	var d DCB
	ieee, ok := findAttr(msg[sizeofDCBMsg:], dcbAttrIEEE)
	if !ok {
		return DCB{}, errors.New("DCB reply without IEEE attributes")
	}
	if pfc, ok := findAttr(ieee, dcbAttrIEEEPFC); ok && len(pfc) >= 2 {
		d.PFCCap, d.PFC = int(pfc[0]), pfc[1]
	}
	if apps, ok := findAttr(ieee, dcbAttrIEEEApps); ok {
		forAttrs(apps, func(typ uint16, v []byte) {
			if typ != dcbAttrIEEEApp || len(v) < sizeofDCBApp || v[0] != appSelDSCP {
				return
			}
			proto := binary.NativeEndian.Uint16(v[2:4])
			if proto > 63 || v[1] > 7 {
				return
			}
			if d.DSCP == nil {
				d.DSCP = map[uint8]uint8{}
			}
			d.DSCP[uint8(proto)] = v[1]
		})
	}
	return d, nil
}

// forAttrs calls f for each netlink attribute of b, stopping at the first
// malformed one.
func forAttrs(b []byte, f func(typ uint16, v []byte)) {
	for len(b) >= 4 {
		l := int(binary.NativeEndian.Uint16(b[0:2]))
		typ := binary.NativeEndian.Uint16(b[2:4]) & nlaTypeMask
		if l < 4 || l > len(b) {
			return
		}
		f(typ, b[4:l])
		next := (l + 3) &^ 3
		if next > len(b) {
			return
		}
		b = b[next:]
	}
}

func findAttr(b []byte, typ uint16) ([]byte, bool) {
	var out []byte
	found := false
	forAttrs(b, func(t uint16, v []byte) {
		if t == typ && !found {
			out, found = v, true
		}
	})
	return out, found
}

// ValidIfName refuses what no netdev can be called (the kernel's
// dev_valid_name), so a request never carries it.
func ValidIfName(name string) error {
	if name == "" || len(name) > 15 || name == "." || name == ".." || strings.ContainsAny(name, "/: \t\n\x00") {
		return fmt.Errorf("invalid interface name %q", name)
	}
	return nil
}

// DefaultDSCPPriority is the priority mlx5 and mlnx_qos give DSCP d by
// default: d>>3 (RoCE's DSCP 26 on priority 3, CNPs' 48 on 6).
func DefaultDSCPPriority(d uint8) uint8 { return d >> 3 }

// DefaultDSCPMap is the whole default DSCP-to-priority map
// (DefaultDSCPPriority of every DSCP).
func DefaultDSCPMap() map[uint8]uint8 {
	m := make(map[uint8]uint8, 64)
	for d := range uint8(64) {
		m[d] = DefaultDSCPPriority(d)
	}
	return m
}

// ieeeAttrs encodes a DCB_ATTR_IEEE attribute holding a PFC setting (when
// pfc is set) and the DSCP entries of dscp as APP entries, in DSCP order.
func ieeeAttrs(pfcCap int, pfc *uint8, dscp map[uint8]uint8) []byte {
	var inner []byte
	if pfc != nil {
		v := make([]byte, sizeofIEEEPFC)
		v[0], v[1] = uint8(pfcCap), *pfc
		inner = append(inner, encodeAttr(dcbAttrIEEEPFC, v)...)
	}
	if len(dscp) > 0 {
		var apps []byte
		for d := range uint8(64) {
			p, ok := dscp[d]
			if !ok {
				continue
			}
			v := []byte{appSelDSCP, p, 0, 0}
			binary.NativeEndian.PutUint16(v[2:], uint16(d))
			apps = append(apps, encodeAttr(dcbAttrIEEEApp, v)...)
		}
		inner = append(inner, encodeAttr(dcbAttrIEEEApps|nlaFNested, apps)...)
	}
	return encodeAttr(dcbAttrIEEE|nlaFNested, inner)
}

// nlaFNested marks a nested attribute.
const nlaFNested = 0x8000

// encodeAttr encodes one netlink attribute, padded to 4 bytes.
func encodeAttr(typ uint16, v []byte) []byte {
	b := make([]byte, 4, 4+len(v)+3)
	binary.NativeEndian.PutUint16(b[0:2], uint16(4+len(v)))
	binary.NativeEndian.PutUint16(b[2:4], typ)
	b = append(b, v...)
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}

// setResult reads the driver's result from a DCB_CMD_IEEE_SET or _DEL
// reply: DCB_ATTR_IEEE holds it as a u8 (the negative errno, truncated).
func setResult(msg []byte) error {
	if len(msg) < sizeofDCBMsg {
		return fmt.Errorf("DCB reply of %d bytes", len(msg))
	}
	v, ok := findAttr(msg[sizeofDCBMsg:], dcbAttrIEEE)
	if !ok || len(v) < 1 || v[0] == 0 {
		return nil
	}
	return syscall.Errno(-int8(v[0]))
}
