package containerdev

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"

	"github.com/railyard-io/railyard/internal/sysfs"
)

// RoCEv2 is the GID type (gid_attrs/types) of a routable RoCE GID.
const RoCEv2 = "RoCE v2"

// HCAGID is the RoCE v2 GID index one of a pod's HCAs has for the address
// its netdev got in the pod: the index NCCL uses for it (NCCL 2.21 and
// later find it themselves, NCCL_IB_GID_INDEX pins one for every HCA).
type HCAGID struct {
	// HCA is the RDMA device, Netdev the pod's interface, Addr the
	// address the GID is of.
	HCA    string `json:"hca"`
	Netdev string `json:"netdev"`
	Addr   string `json:"addr"`
	// Port and Index locate the GID (ports/<Port>/gids/<Index>).
	Port  int `json:"port"`
	Index int `json:"index"`
}

func (g HCAGID) String() string {
	return fmt.Sprintf("%s port %d: index %d (%s on %s)", g.HCA, g.Port, g.Index, g.Addr, g.Netdev)
}

// ErrNotRoCE is PickGID's error for an HCA with no Ethernet port: an
// InfiniBand port's GID needs no choosing.
var ErrNotRoCE = errors.New("no RoCE (Ethernet) port")

// ErrNoRoCEGID is PickGID's error when no RoCE v2 GID is of the
// netdev's addresses (yet: the kernel adds it a little after the address).
var ErrNoRoCEGID = errors.New("no RoCE v2 GID of the netdev's address")

// PickGID finds, in the GID table of RDMA device hca, the RoCE v2 entry
// of an address of the pod's netdev: IPv4 addresses first (as
// IPv4-mapped GIDs, ::ffff:a.b.c.d; NCCL's default family is AF_INET),
// then IPv6, each tied to netdev (gid_attrs/ndevs) where the kernel names
// one. The error says why none is and how to fix it.
func PickGID(hca, netdev string, table []sysfs.GID, addrs []net.IP) (HCAGID, error) {
	if !slices.ContainsFunc(table, func(g sysfs.GID) bool { return g.LinkLayer == "Ethernet" }) {
		return HCAGID{}, fmt.Errorf("%s: %w", hca, ErrNotRoCE)
	}
	ordered := slices.Clone(addrs)
	slices.SortStableFunc(ordered, func(a, b net.IP) int {
		return boolOrder(a.To4() == nil, b.To4() == nil)
	})
	for _, a := range ordered {
		for _, g := range table {
			if g.Type == RoCEv2 && g.LinkLayer == "Ethernet" && (g.Netdev == "" || g.Netdev == netdev) && g.GID.Equal(a) {
				return HCAGID{HCA: hca, Netdev: netdev, Addr: a.String(), Port: g.Port, Index: g.Index}, nil
			}
		}
	}
	names := make([]string, len(addrs))
	for i, a := range addrs {
		names[i] = a.String()
	}
	return HCAGID{}, fmt.Errorf("%s: %w %s (%s): the RDMA device must be in the network namespace of %s with its address "+
		"(rdma: true with the RDMA subsystem in exclusive netns mode, or the shared mode), on an Ethernet port, "+
		"and the netdev up (a port that is down has no RoCE v2 GIDs); `show_gids` in the pod lists the table",
		hca, ErrNoRoCEGID, netdev, strings.Join(names, ", "), netdev)
}

func boolOrder(a, b bool) int {
	switch {
	case a == b:
		return 0
	case !a:
		return -1
	}
	return 1
}

// GIDIndexMismatchError says that a pod's HCAs have their RoCE v2 GIDs at
// different indexes: NCCL_IB_GID_INDEX, one index for every HCA, would be
// wrong for some of them.
type GIDIndexMismatchError struct {
	GIDs []HCAGID
}

func (e *GIDIndexMismatchError) Error() string {
	parts := make([]string, len(e.GIDs))
	for i, g := range e.GIDs {
		parts[i] = g.String()
	}
	return "the pod's HCAs have their RoCE v2 GIDs at different indexes (" + strings.Join(parts, "; ") + "): " +
		"leave NCCL_IB_GID_INDEX unset, so that NCCL (2.21 and later) picks each HCA's RoCE v2 GID of NCCL_IB_ADDR_FAMILY itself " +
		"(Railyard sets NCCL_IB_ROCE_VERSION_NUM=2 and NCCL_IB_ADDR_FAMILY); an older NCCL takes one NCCL_IB_GID_INDEX for all: " +
		"give every rail netdev the same addresses in the same order (an extra address, or IPv6 on one only, moves the entries after it), " +
		"or upgrade NCCL"
}

// CheckGIDIndexes checks that a pod's HCAs have their RoCE v2 GIDs at one
// index and returns it; -1 and nil for none. Otherwise the error is a
// *GIDIndexMismatchError naming each HCA's index and the fix.
func CheckGIDIndexes(gids []HCAGID) (int, error) {
	if len(gids) == 0 {
		return -1, nil
	}
	gids = slices.Clone(gids)
	slices.SortFunc(gids, func(a, b HCAGID) int { return strings.Compare(a.HCA, b.HCA) })
	for _, g := range gids[1:] {
		if g.Index != gids[0].Index {
			return -1, &GIDIndexMismatchError{GIDs: gids}
		}
	}
	return gids[0].Index, nil
}

// GIDIndexes spells the indexes of gids for a log line, by HCA
// ("mlx5_3=3,mlx5_4=5").
func GIDIndexes(gids []HCAGID) string {
	gids = slices.Clone(gids)
	slices.SortFunc(gids, func(a, b HCAGID) int { return strings.Compare(a.HCA, b.HCA) })
	parts := make([]string, len(gids))
	for i, g := range gids {
		parts[i] = g.HCA + "=" + strconv.Itoa(g.Index)
	}
	return strings.Join(parts, ",")
}
