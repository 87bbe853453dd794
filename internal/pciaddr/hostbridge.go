package pciaddr

import "strings"

// HostBridge names a PCI host bridge (a root complex) by its domain and
// root bus, as sysfs names its directory: "pci0000:00", "pci10000:e0".
type HostBridge struct {
	Domain uint32
	Bus    uint8
}

// ParseHostBridge reads "pciDDDD:BB" with the domain rules of Parse (4 to 8
// hex digits, either case).
func ParseHostBridge(s string) (HostBridge, error) {
	if h, _, ok := scanHostBridge(s); ok {
		return h, nil
	}
	reason := "want pciDDDD:BB"
	if rest, ok := strings.CutPrefix(s, "pci"); ok {
		if dom, bus, ok := strings.Cut(rest, ":"); ok {
			if r := hexField("domain", dom, 4, 8); r != "" {
				reason = r
			} else if r := hexField("bus", bus, 2, 2); r != "" {
				reason = r
			}
		}
	}
	return HostBridge{}, newError("PCI host bridge", s, reason)
}

// IsCanonicalHostBridge reports whether s names a host bridge exactly as
// sysfs does (lower case, the kernel's domain width).
func IsCanonicalHostBridge(s string) bool {
	_, canonical, ok := scanHostBridge(s)
	return ok && canonical
}

// String prints the sysfs name, "pci0000:00".
func (h HostBridge) String() string {
	var buf [16]byte
	b := appendDomain(append(buf[:0], "pci"...), h.Domain)
	return string(append(b, ':', hexDigits[h.Bus>>4], hexDigits[h.Bus&15]))
}

// Compare orders host bridges numerically, by domain and bus.
func (h HostBridge) Compare(o HostBridge) int {
	return Addr{Domain: h.Domain, Bus: h.Bus}.Compare(Addr{Domain: o.Domain, Bus: o.Bus})
}

func scanHostBridge(s string) (h HostBridge, canonical, ok bool) {
	d := len(s) - len("pci:BB")
	if d < 4 || d > 8 || s[:3] != "pci" || s[3+d] != ':' {
		return HostBridge{}, false, false
	}
	var acc byte
	for i := 3; i < 3+d; i++ {
		v := hexVal[s[i]]
		acc |= v
		h.Domain = h.Domain<<4 | uint32(v&15)
	}
	b0, b1 := hexVal[s[4+d]], hexVal[s[5+d]]
	if acc |= b0 | b1; acc&invalid != 0 {
		return HostBridge{}, false, false
	}
	h.Bus = (b0&15)<<4 | b1&15
	return h, acc&upper == 0 && (d == 4 || s[3] != '0'), true
}
