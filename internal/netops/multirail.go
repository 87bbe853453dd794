package netops

import (
	"errors"
	"fmt"
	"net"
	"path"
	"strings"
)

// Route is a route of one routing table through one link.
type Route struct {
	// Table is the routing table (254 is main).
	Table int `json:"table"`
	// Dst is the destination; nil is the default route of GW's family.
	Dst *net.IPNet `json:"dst,omitempty"`
	// GW is the gateway; nil for a route on the link (scope link).
	GW net.IP `json:"gw,omitempty"`
	// Link is the output link's name.
	Link string `json:"link"`
}

func (r Route) String() string {
	dst := "default"
	if r.Dst != nil {
		dst = r.Dst.String()
	}
	s := fmt.Sprintf("%s dev %s table %d", dst, r.Link, r.Table)
	if r.GW != nil {
		s = fmt.Sprintf("%s via %s dev %s table %d", dst, r.GW, r.Link, r.Table)
	}
	return s
}

// Rule is a policy routing rule: packets from Src look up Table.
type Rule struct {
	Priority int        `json:"priority"`
	Src      *net.IPNet `json:"src"`
	Table    int        `json:"table"`
}

func (r Rule) String() string {
	return fmt.Sprintf("%d: from %s lookup %d", r.Priority, r.Src, r.Table)
}

// SameRule reports whether a and b are the same rule.
func SameRule(a, b Rule) bool {
	return a.Priority == b.Priority && a.Table == b.Table && a.Src.String() == b.Src.String()
}

// Host routing tables Rules leaves out.
const (
	TableDefault = 253
	TableMain    = 254
	TableLocal   = 255
)

// ErrNoSysfs is the error of WithSysfs where no sysfs can be had for a
// namespace (the fake's namespaces without a tree).
var ErrNoSysfs = errors.New("no sysfs for the namespace")

// IfaceSysctl is the sysctl of interface ifname's knob for family
// ("ipv4", "ipv6"), as a path below /proc/sys:
// "net/ipv4/conf/net1/arp_ignore".
func IfaceSysctl(family, ifname, knob string) string {
	return path.Join("net", family, "conf", ifname, knob)
}

// checkSysctl refuses a sysctl name that is not a clean path below
// /proc/sys/net.
func checkSysctl(name string) error {
	// A clean path has no "." or ".." element (an interface's own name
	// may hold dots).
	if !strings.HasPrefix(name, "net/") || path.Clean(name) != name {
		return fmt.Errorf("sysctl %q: want a clean path below /proc/sys/net (net/ipv4/conf/<if>/<knob>)", name)
	}
	return nil
}
