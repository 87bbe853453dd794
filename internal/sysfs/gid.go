package sysfs

import (
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"strconv"
)

// GID is one filled entry of an RDMA port's GID table, as
// class/infiniband/<dev>/ports/<port>/ spells it.
type GID struct {
	// Port and Index locate the entry (ports/<Port>/gids/<Index>).
	Port  int `json:"port"`
	Index int `json:"index"`
	// GID is the entry, 16 bytes: an IPv4 address of a RoCE netdev is
	// IPv4-mapped (::ffff:a.b.c.d).
	GID net.IP `json:"gid"`
	// Type is gid_attrs/types/<Index>: "RoCE v2", "IB/RoCE v1" ("" where
	// the kernel has none, as on an InfiniBand port of an older kernel).
	Type string `json:"type,omitempty"`
	// Netdev is gid_attrs/ndevs/<Index>: the netdev the kernel tied a RoCE
	// GID to ("" on InfiniBand).
	Netdev string `json:"netdev,omitempty"`
	// LinkLayer is the port's link_layer ("Ethernet" for RoCE).
	LinkLayer string `json:"linkLayer,omitempty"`
}

// GIDTable returns the filled entries of every port of RDMA device dev
// (class/infiniband/<dev>), port then index order. An empty entry (all
// zeros) is left out and its attributes are not read: the kernel answers
// EINVAL for them. A RoCE port's GIDs of IP addresses appear only once
// the netdev has the address in the RDMA device's network namespace, a
// little after the address is set (the kernel fills them from a work
// queue), at an index that moves with the addresses the netdev had
// before (the usual IPv4 RoCE v2 entry is 3). A device without ports is
// an empty table; one that does not exist is ErrNotFound.
func (f FS) GIDTable(dev string) ([]GID, error) {
	devs, err := f.List("class/infiniband")
	if err != nil {
		return nil, fmt.Errorf("listing RDMA devices: %w", err)
	}
	if !slices.Contains(devs, dev) {
		return nil, fmt.Errorf("RDMA device %s: %w", dev, ErrNotFound)
	}
	base := filepath.Join("class/infiniband", dev)
	ports, err := f.List(filepath.Join(base, "ports"))
	if err != nil {
		return nil, fmt.Errorf("RDMA device %s: %w", dev, err)
	}
	var out []GID
	for _, ps := range sortedNumbers(ports) {
		pd := filepath.Join(base, "ports", strconv.Itoa(ps))
		ll, _ := f.ReadString(filepath.Join(pd, "link_layer"))
		idx, err := f.List(filepath.Join(pd, "gids"))
		if err != nil {
			return nil, fmt.Errorf("RDMA device %s port %d: %w", dev, ps, err)
		}
		for _, i := range sortedNumbers(idx) {
			s, err := f.ReadString(filepath.Join(pd, "gids", strconv.Itoa(i)))
			if err != nil {
				return nil, fmt.Errorf("RDMA device %s port %d: %w", dev, ps, err)
			}
			gid := net.ParseIP(s)
			if gid == nil {
				return nil, fmt.Errorf("RDMA device %s port %d GID %d: %s is not a GID", dev, ps, i, Quote(s))
			}
			if gid.IsUnspecified() {
				continue
			}
			g := GID{Port: ps, Index: i, GID: gid.To16(), LinkLayer: ll}
			// Missing or unreadable attributes leave the field empty: an
			// InfiniBand port has no netdev.
			g.Type, _ = f.ReadString(filepath.Join(pd, "gid_attrs/types", strconv.Itoa(i)))
			g.Netdev, _ = f.ReadString(filepath.Join(pd, "gid_attrs/ndevs", strconv.Itoa(i)))
			out = append(out, g)
		}
	}
	return out, nil
}

// sortedNumbers keeps the decimal names of a listing, in numeric order
// (List sorts "10" before "2").
func sortedNumbers(names []string) []int {
	var out []int
	for _, n := range names {
		if v, err := strconv.Atoi(n); err == nil && v >= 0 {
			out = append(out, v)
		}
	}
	slices.Sort(out)
	return out
}
