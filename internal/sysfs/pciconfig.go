package sysfs

import (
	"encoding/binary"
	"fmt"
	"strings"
)

// PCIe extended capabilities start at this offset of config space.
const extCapStart = 0x100

// ExtCapACS is the PCIe extended capability ID of Access Control Services.
const ExtCapACS = 0x000d

// ACS control register bits (PCIe Base Specification, ACS Extended
// Capability, ACS Control Register).
const (
	ACSSourceValidation    uint16 = 1 << 0
	ACSTranslationBlocking uint16 = 1 << 1
	ACSP2PRequestRedirect  uint16 = 1 << 2
	ACSP2PCompletionRedir  uint16 = 1 << 3
	ACSUpstreamForwarding  uint16 = 1 << 4
	ACSP2PEgressControl    uint16 = 1 << 5
	ACSDirectTranslatedP2P uint16 = 1 << 6
)

// ACSRedirecting are the control bits that send peer-to-peer traffic up to
// the root complex (redirect) or block it (egress control).
const ACSRedirecting = ACSP2PRequestRedirect | ACSP2PCompletionRedir | ACSP2PEgressControl

// ACS is a function's ACS extended capability.
type ACS struct {
	Offset     int    // where the capability sits in config space
	Capability uint16 // ACS Capability Register
	Control    uint16 // ACS Control Register
}

// Redirects reports whether peer-to-peer requests or completions are
// redirected upstream or blocked.
func (a ACS) Redirects() bool { return a.Control&ACSRedirecting != 0 }

// String spells the control register as lspci does ("SrcValid+ ...").
func (a ACS) String() string {
	names := []string{"SrcValid", "TransBlk", "ReqRedir", "CmpltRedir", "UpstreamFwd", "EgressCtrl", "DirectTrans"}
	parts := make([]string, len(names))
	for i, n := range names {
		sign := "-"
		if a.Control&(1<<i) != 0 {
			sign = "+"
		}
		parts[i] = n + sign
	}
	return strings.Join(parts, " ")
}

// FindExtCap walks the extended capability list of a config space image
// and returns the offset of the capability with the given ID. ok is false
// when the image has no extended space (shorter than 260 bytes: an
// unprivileged read or conventional PCI) or the list lacks the ID. A
// malformed list (a loop, an offset outside the space) is an error.
func FindExtCap(config []byte, id uint16) (off int, ok bool, err error) {
	if len(config) < extCapStart+4 {
		return 0, false, nil
	}
	off = extCapStart
	for seen := 0; ; seen++ {
		if seen > (len(config)-extCapStart)/4 {
			return 0, false, fmt.Errorf("extended capability list loops")
		}
		if off < extCapStart || off+4 > len(config) || off%4 != 0 {
			return 0, false, fmt.Errorf("extended capability at %#x is outside config space", off)
		}
		hdr := binary.LittleEndian.Uint32(config[off:])
		if hdr == 0 || hdr == 0xffffffff {
			return 0, false, nil // no extended capabilities
		}
		if uint16(hdr&0xffff) == id {
			return off, true, nil
		}
		next := int(hdr >> 20)
		if next == 0 {
			return 0, false, nil
		}
		off = next
	}
}

// ParseACS finds and reads the ACS capability in a config space image.
func ParseACS(config []byte) (ACS, bool, error) {
	off, ok, err := FindExtCap(config, ExtCapACS)
	if err != nil || !ok {
		return ACS{}, false, err
	}
	if off+8 > len(config) {
		return ACS{}, false, fmt.Errorf("ACS capability at %#x is truncated", off)
	}
	return ACS{
		Offset:     off,
		Capability: binary.LittleEndian.Uint16(config[off+4:]),
		Control:    binary.LittleEndian.Uint16(config[off+6:]),
	}, true, nil
}

// HasExtendedConfig reports whether a config image includes the extended
// space (an unprivileged reader sees 64 bytes).
func HasExtendedConfig(config []byte) bool { return len(config) >= extCapStart+4 }
